package io.payonce.sandbox;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import jakarta.enterprise.context.ApplicationScoped;

/**
 * Each merchant's fault behaviour of this instance's sandbox: the merchant's next {@code count} charges
 * take {@code mode} after {@code latencyMs}, then its charges are {@code ok} with no latency again. One
 * merchant's setting never touches another's charges. Kept in memory: it is a test control of one
 * instance; what a charge will do is written into the ledger the moment it arrives, so the ledger, shared
 * by every instance, is what outlives this process.
 */
@ApplicationScoped
public class SandboxBehavior {

    /** One behaviour setting, or the step one charge takes. */
    public record Setting(SandboxMode mode, long latencyMs, int count) {
        static final Setting NORMAL = new Setting(SandboxMode.OK, 0, 0);
    }

    private final ConcurrentMap<String, Setting> byMerchant = new ConcurrentHashMap<>();

    public Setting replace(String merchantId, Setting setting) {
        if (setting.count() <= 0) {
            byMerchant.remove(merchantId);
            return Setting.NORMAL;
        }
        byMerchant.put(merchantId, setting);
        return setting;
    }

    public Setting current(String merchantId) {
        return byMerchant.getOrDefault(merchantId, Setting.NORMAL);
    }

    /** True while the merchant has no behaviour set: every charge of its is {@code ok} at once. */
    public boolean isNormal(String merchantId) {
        return !byMerchant.containsKey(merchantId);
    }

    /** Takes the merchant's step for one charge, counting it down. */
    public Setting next(String merchantId) {
        Setting[] taken = { Setting.NORMAL };
        byMerchant.computeIfPresent(merchantId, (merchant, now) -> {
            taken[0] = new Setting(now.mode(), now.latencyMs(), 1);
            return now.count() <= 1 ? null : new Setting(now.mode(), now.latencyMs(), now.count() - 1);
        });
        return taken[0];
    }
}
