package io.payonce.idempotency;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.payonce.database.Database;
import io.payonce.database.UtcTime;
import io.payonce.redis.CachedResult;
import io.payonce.redis.RedisFastPath;
import io.payonce.redis.WakeUps;
import io.smallrye.mutiny.Uni;

/**
 * Where duplicates wait for the first execution's result, on whichever instance it runs. A waiter
 * registers for the token's Redis wake-up, then looks at the stored result (Redis cache, then the
 * MySQL row), then sleeps until the wake-up or its next poll. The MySQL row is the authority, so a
 * waiter without Redis is still correct: it only polls faster and wakes later.
 */
@ApplicationScoped
public class DuplicateWaiter {

    /** Without pub/sub: poll the row soon and often. */
    private static final Duration FIRST_POLL = Duration.ofMillis(10);
    private static final Duration MAX_POLL = Duration.ofMillis(250);
    /** With pub/sub the wake-up comes first; polling is only a safety net. */
    private static final Duration MAX_POLL_LISTENING = Duration.ofSeconds(1);
    /** However the database behaves, a wait ends this soon after its deadline. */
    private static final Duration PAST_DEADLINE = Duration.ofMillis(500);

    private final TokenRepository tokens;
    private final RedisFastPath redis;
    private final WakeUps wakeUps;
    private final MeterRegistry meters;
    private final Database db;

    DuplicateWaiter(TokenRepository tokens, RedisFastPath redis, WakeUps wakeUps, MeterRegistry meters, Database db) {
        this.tokens = tokens;
        this.redis = redis;
        this.wakeUps = wakeUps;
        this.meters = meters;
        this.db = db;
    }

    /** How a wait ended. */
    public sealed interface Waited {
        /** The first execution's final answer, and where it was read: redis, pubsub or mysql. */
        record Finished(StoredResponse response, String source) implements Waited {
        }

        /** The owner released the token (transient failure): the waiter may execute it itself. */
        record Released() implements Waited {
        }

        /** Still in progress at the deadline; {@code interim} is the owner's 202 when it gave one. */
        record StillRunning(StoredResponse interim) implements Waited {
        }
    }

    /**
     * Waits for the token's first execution. Fails with {@link IdempotencyKeyReusedException} when the
     * token turns out to be bound to another fingerprint.
     */
    public Uni<Waited> await(String merchantId, String token, String fingerprint, Instant deadline) {
        Timer.Sample sample = Timer.start(meters);
        Duration bound = Duration.between(UtcTime.now(), deadline).plus(PAST_DEADLINE);
        return round(merchantId, token, fingerprint, deadline, FIRST_POLL)
                // a database that stops answering without closing the connection holds a look for up to the
                // database timeout: the wait still ends by its deadline, as one still running
                .ifNoItem().after(bound.isNegative() ? PAST_DEADLINE : bound)
                .recoverWithItem(() -> new Waited.StillRunning(null))
                .onItemOrFailure().invoke((waited, failure) -> sample.stop(meters.timer("payonce.idempotency.wait",
                        "outcome", waited == null ? "failed" : waited.getClass().getSimpleName().toLowerCase())));
    }

    private Uni<Waited> round(String merchantId, String token, String fingerprint, Instant deadline, Duration delay) {
        CompletableFuture<CachedResult> wake = wakeUps.register(merchantId, token);
        return look(merchantId, token, fingerprint, deadline)
                .flatMap(found -> {
                    if (found != null) {
                        return Uni.createFrom().item(found);
                    }
                    Duration left = Duration.between(UtcTime.now(), deadline);
                    Duration sleep = delay.compareTo(left) < 0 ? delay : left;
                    Duration cap = wakeUps.listening() ? MAX_POLL_LISTENING : MAX_POLL;
                    Duration next = delay.multipliedBy(2).compareTo(cap) < 0 ? delay.multipliedBy(2) : cap;
                    return Uni.createFrom().completionStage(wake)
                            .ifNoItem().after(sleep.isNegative() || sleep.isZero() ? Duration.ofMillis(1) : sleep)
                            .recoverWithItem((CachedResult) null)
                            .flatMap(notice -> {
                                if (notice != null && notice.isAnswer()) {
                                    return Uni.createFrom().item(answer(notice, fingerprint, "pubsub"));
                                }
                                return round(merchantId, token, fingerprint, deadline, next);
                            });
                })
                // a waiter leaves cleanly however it ends: answered, timed out, or its client gone
                .onTermination().invoke(() -> wakeUps.unregister(merchantId, token, wake));
    }

    /** The stored result if there is one, Released or StillRunning when they apply, else null. */
    private Uni<Waited> look(String merchantId, String token, String fingerprint, Instant deadline) {
        return redis.cached(merchantId, token).flatMap(cached -> {
            if (cached != null && cached.isAnswer()) {
                return Uni.createFrom().item(answer(cached, fingerprint, "redis"));
            }
            return db.bounded(tokens.find(merchantId, token)).flatMap(row -> {
                if (row == null) {
                    // no row yet: while a copy holds the ownership key its first transaction is under way
                    return redis.owned(merchantId, token)
                            .map(held -> held ? running(deadline, null) : new Waited.Released());
                }
                if (row.state() == TokenState.AVAILABLE) {
                    return Uni.createFrom().item(new Waited.Released());
                }
                if (row.boundToOtherThan(fingerprint)) {
                    throw new IdempotencyKeyReusedException();
                }
                if (row.state() == TokenState.COMPLETED) {
                    return Uni.createFrom().item(new Waited.Finished(row.response(), "mysql"));
                }
                return Uni.createFrom().item(running(deadline, row.response()));
            });
        });
    }

    /** Null (wait on) before the deadline, unless the instance is shutting down. */
    private Waited running(Instant deadline, StoredResponse interim) {
        return UtcTime.now().isBefore(deadline) && !wakeUps.draining() ? null : new Waited.StillRunning(interim);
    }

    private static Waited answer(CachedResult result, String fingerprint, String source) {
        return new Waited.Finished(result.responseFor(fingerprint), source);
    }
}
