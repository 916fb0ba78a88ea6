package io.payonce.reconcile;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

import io.payonce.PayOnceConfig;
import io.quarkus.runtime.StartupEvent;

/**
 * Refuses to start with a configuration under which an owner would routinely outlive its lease, or
 * reconciliation look at a payment whose owner may still be waiting for the channel. Ownership is fenced, so
 * such settings would not charge twice; they would make take-overs of live owners, and answers of 202 where
 * the owner could have settled, the rule rather than the exception.
 *
 * <p>The lease must exceed what an owner routinely spends until its charge is answered: its opening
 * transaction (one database timeout) plus the channel timeout. An owner that takes longer (a COMMIT in
 * doubt resolved, a pause) checks its epoch before it charges, and is fenced if it lost the payment.
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
        Duration ownerBeforeAnswer = ownerUntilChargeAnswered(config);
        if (config.idempotency().lease().compareTo(ownerBeforeAnswer) <= 0) {
            problems.add("payonce.idempotency.lease (" + config.idempotency().lease()
                    + ") must be above payonce.channel.timeout plus payonce.database.timeout (" + ownerBeforeAnswer
                    + ")");
        }
        if (config.reconcile().giveUpAfter().compareTo(config.reconcile().minAge()) <= 0) {
            problems.add("payonce.reconcile.give-up-after (" + config.reconcile().giveUpAfter()
                    + ") must be above payonce.reconcile.min-age (" + config.reconcile().minAge() + ")");
        }
        return problems;
    }

    /** How long an owner routinely takes at most from its opening to the channel's answer to its charge. */
    static Duration ownerUntilChargeAnswered(PayOnceConfig config) {
        return config.channel().timeout().plus(config.database().timeout());
    }
}
