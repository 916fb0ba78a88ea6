package io.payonce.sandbox;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import jakarta.enterprise.context.ApplicationScoped;

/**
 * Each merchant's fault behaviour of this instance's sandbox, one per operation: the merchant's next {@code count}
 * charges (or refunds) take {@code mode} after {@code latencyMs}, then they are {@code ok} with no latency again.
 * One merchant's setting never touches another's calls, nor a charge setting a refund. Kept in memory: it is a
 * test control of one instance; what a call will do is written into the ledger the moment it arrives, so the
 * ledger, shared by every instance, is what outlives this process.
 */
@ApplicationScoped
public class SandboxBehavior {

    /** One behaviour setting, or the step one call takes. */
    public record Setting(SandboxOperation operation, SandboxMode mode, long latencyMs, int count) {
        static Setting normal(SandboxOperation operation) {
            return new Setting(operation, SandboxMode.OK, 0, 0);
        }
    }

    private record Key(String merchantId, SandboxOperation operation) {
    }

    private final ConcurrentMap<Key, Setting> settings = new ConcurrentHashMap<>();

    public Setting replace(String merchantId, Setting setting) {
        Key key = new Key(merchantId, setting.operation());
        if (setting.count() <= 0) {
            settings.remove(key);
            return Setting.normal(setting.operation());
        }
        settings.put(key, setting);
        return setting;
    }

    public Setting current(String merchantId, SandboxOperation operation) {
        return settings.getOrDefault(new Key(merchantId, operation), Setting.normal(operation));
    }

    /** True while the merchant has no behaviour set for the operation: every call of it is {@code ok} at once. */
    public boolean isNormal(String merchantId, SandboxOperation operation) {
        return !settings.containsKey(new Key(merchantId, operation));
    }

    /** Takes the merchant's step for one call of the operation, counting it down. */
    public Setting next(String merchantId, SandboxOperation operation) {
        Setting[] taken = { Setting.normal(operation) };
        settings.computeIfPresent(new Key(merchantId, operation), (key, now) -> {
            taken[0] = new Setting(operation, now.mode(), now.latencyMs(), 1);
            return now.count() <= 1 ? null : new Setting(operation, now.mode(), now.latencyMs(), now.count() - 1);
        });
        return taken[0];
    }
}
