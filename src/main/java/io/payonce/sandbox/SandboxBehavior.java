package io.payonce.sandbox;

import java.util.concurrent.atomic.AtomicReference;

import jakarta.enterprise.context.ApplicationScoped;

/**
 * The fault behaviour of this instance's sandbox: the next {@code count} charges take {@code mode}
 * after {@code latencyMs}, then charges are {@code ok} with no latency again. Kept in memory: it is a
 * test control of one instance, unlike the ledger, which is shared.
 */
@ApplicationScoped
public class SandboxBehavior {

    /** One behaviour setting, or the step one charge takes. */
    public record Setting(SandboxMode mode, long latencyMs, int count) {
        static final Setting NORMAL = new Setting(SandboxMode.OK, 0, 0);
    }

    private final AtomicReference<Setting> current = new AtomicReference<>(Setting.NORMAL);

    public Setting replace(Setting setting) {
        Setting next = setting.count() <= 0 ? Setting.NORMAL : setting;
        current.set(next);
        return next;
    }

    public Setting current() {
        return current.get();
    }

    /** True while no behaviour is set: every charge is {@code ok} at once. */
    public boolean isNormal() {
        return current.get().count() <= 0;
    }

    /** Takes the step for one charge, counting it down. */
    public Setting next() {
        while (true) {
            Setting now = current.get();
            if (now.count() <= 0) {
                return Setting.NORMAL;
            }
            Setting after = now.count() == 1 ? Setting.NORMAL : new Setting(now.mode(), now.latencyMs(), now.count() - 1);
            if (current.compareAndSet(now, after)) {
                return new Setting(now.mode(), now.latencyMs(), 1);
            }
        }
    }
}
