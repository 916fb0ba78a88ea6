package io.payonce.reconcile;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

import io.payonce.PayOnceConfig;
import io.quarkus.runtime.StartupEvent;

/**
 * Refuses to start with a configuration under which reconciliation could look at a payment whose owner
 * may still be waiting for the channel: the owner would settle from the channel's answer while the
 * reconciler acted on an older one.
 */
@Singleton
public class RecoveryTimings {

    /** A configuration the service must not run with, naming the keys to change. */
    public static final class UnsafeConfigurationException extends RuntimeException {
        UnsafeConfigurationException(String message) {
            super(message, null, false, false);
        }
    }

    void check(@Observes StartupEvent start, PayOnceConfig config) {
        List<String> problems = problems(config);
        if (!problems.isEmpty()) {
            throw new UnsafeConfigurationException("refusing to start: " + String.join("; ", problems));
        }
    }

    static List<String> problems(PayOnceConfig config) {
        Duration channel = config.channel().timeout();
        List<String> problems = new ArrayList<>();
        if (config.reconcile().minAge().compareTo(channel) <= 0) {
            problems.add("payonce.reconcile.min-age (" + config.reconcile().minAge()
                    + ") must be above payonce.channel.timeout (" + channel + ")");
        }
        if (config.idempotency().lease().compareTo(channel) <= 0) {
            problems.add("payonce.idempotency.lease (" + config.idempotency().lease()
                    + ") must be above payonce.channel.timeout (" + channel + ")");
        }
        if (config.reconcile().giveUpAfter().compareTo(config.reconcile().minAge()) <= 0) {
            problems.add("payonce.reconcile.give-up-after (" + config.reconcile().giveUpAfter()
                    + ") must be above payonce.reconcile.min-age (" + config.reconcile().minAge() + ")");
        }
        return problems;
    }
}
