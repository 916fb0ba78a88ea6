package io.payonce.idempotency;

import java.time.Duration;
import java.time.Instant;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.payonce.mysql.UtcTime;
import io.smallrye.mutiny.Uni;

/**
 * Where duplicates wait for the first execution's result. The MySQL row is polled with backoff: it is
 * the authority, so a waiter that only polls is always correct, just slower to wake.
 */
@ApplicationScoped
public class DuplicateWaiter {

    private static final Duration FIRST_POLL = Duration.ofMillis(10);
    private static final Duration MAX_POLL = Duration.ofMillis(250);

    private final TokenRepository tokens;
    private final MeterRegistry meters;

    DuplicateWaiter(TokenRepository tokens, MeterRegistry meters) {
        this.tokens = tokens;
        this.meters = meters;
    }

    /** How a wait ended. */
    public sealed interface Waited {
        /** The first execution stored its final answer. */
        record Finished(StoredResponse response) implements Waited {
        }

        /** The owner released the token (transient failure): the waiter may execute it itself. */
        record Released() implements Waited {
        }

        /** Still in progress at the deadline; {@code interim} is the owner's 202 when it gave one. */
        record StillRunning(StoredResponse interim) implements Waited {
        }
    }

    public Uni<Waited> await(String merchantId, String token, Instant deadline) {
        Timer.Sample sample = Timer.start(meters);
        return poll(merchantId, token, deadline, FIRST_POLL).invoke(waited -> sample.stop(meters.timer(
                "payonce.idempotency.wait", "outcome", waited.getClass().getSimpleName().toLowerCase())));
    }

    private Uni<Waited> poll(String merchantId, String token, Instant deadline, Duration delay) {
        return tokens.find(merchantId, token).flatMap(row -> {
            if (row == null || row.state() == TokenState.AVAILABLE) {
                return Uni.createFrom().item(new Waited.Released());
            }
            if (row.state() == TokenState.COMPLETED) {
                return Uni.createFrom().item(new Waited.Finished(row.response()));
            }
            Duration left = Duration.between(UtcTime.now(), deadline);
            if (left.isNegative() || left.isZero()) {
                return Uni.createFrom().item(new Waited.StillRunning(row.response()));
            }
            Duration sleep = delay.compareTo(left) < 0 ? delay : left;
            Duration next = delay.multipliedBy(2).compareTo(MAX_POLL) < 0 ? delay.multipliedBy(2) : MAX_POLL;
            return Uni.createFrom().voidItem().onItem().delayIt().by(sleep)
                    .flatMap(v -> poll(merchantId, token, deadline, next));
        });
    }
}
