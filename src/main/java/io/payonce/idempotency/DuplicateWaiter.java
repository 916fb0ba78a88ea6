package io.payonce.idempotency;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
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

    /**
     * How a wait ended: what the token's row (or its cached copy) held when the waiter last looked, and
     * where that was read (redis, pubsub or mysql). {@link TokenFinding.Running} means the deadline came
     * first; {@link TokenFinding.Vacant} that the owner released the token, so the waiter may claim it.
     */
    public record Waited(TokenFinding finding, String source) {
    }

    /**
     * Waits for the token's first execution. Fails with {@link IdempotencyKeyReusedException} when the
     * token turns out to be bound to another fingerprint, {@link InvalidIdempotencyTokenException} once it
     * has expired.
     */
    public Uni<Waited> await(String merchantId, String token, String fingerprint, Instant deadline) {
        Timer.Sample sample = Timer.start(meters);
        Duration bound = Duration.between(UtcTime.now(), deadline).plus(PAST_DEADLINE);
        return round(merchantId, token, fingerprint, deadline, FIRST_POLL)
                // a database that stops answering without closing the connection holds a look for up to the
                // database timeout: the wait still ends by its deadline, as one still running
                .ifNoItem().after(bound.isNegative() ? PAST_DEADLINE : bound)
                .recoverWithItem(() -> new Waited(new TokenFinding.Running(null), "deadline"))
                .onItemOrFailure().invoke((waited, failure) -> sample.stop(meters.timer("payonce.idempotency.wait",
                        "outcome", outcome(waited))));
    }

    private Uni<Waited> round(String merchantId, String token, String fingerprint, Instant deadline, Duration delay) {
        CompletableFuture<Optional<CachedResult>> wake = wakeUps.register(merchantId, token);
        return look(merchantId, token, fingerprint)
                .flatMap(found -> {
                    if (!(found.finding() instanceof TokenFinding.Running) || !waitOn(deadline)) {
                        return Uni.createFrom().item(found);
                    }
                    Duration left = Duration.between(UtcTime.now(), deadline);
                    Duration sleep = delay.compareTo(left) < 0 ? delay : left;
                    Duration cap = wakeUps.listening() ? MAX_POLL_LISTENING : MAX_POLL;
                    Duration next = delay.multipliedBy(2).compareTo(cap) < 0 ? delay.multipliedBy(2) : cap;
                    return Uni.createFrom().completionStage(wake)
                            .ifNoItem().after(sleep.isNegative() || sleep.isZero() ? Duration.ofMillis(1) : sleep)
                            .recoverWithItem(Optional.empty())
                            .flatMap(notice -> notice.isPresent()
                                    ? Uni.createFrom().item(answer(notice.get(), fingerprint, "pubsub"))
                                    : round(merchantId, token, fingerprint, deadline, next));
                })
                // a waiter leaves cleanly however it ends: answered, timed out, or its client gone
                .onTermination().invoke(() -> wakeUps.unregister(merchantId, token, wake));
    }

    /** What the token holds now: its cached answer, else what its row means. */
    private Uni<Waited> look(String merchantId, String token, String fingerprint) {
        return redis.cached(merchantId, token).flatMap(cached -> {
            if (cached.isPresent()) {
                return Uni.createFrom().item(answer(cached.get(), fingerprint, "redis"));
            }
            return db.bounded(tokens.find(merchantId, token)).flatMap(row -> {
                TokenFinding finding = TokenFinding.of(row, fingerprint, UtcTime.now());
                if (row.isEmpty()) {
                    // no row yet: while a copy holds the Redis ownership key its first transaction is under way
                    return redis.owned(merchantId, token).map(held -> new Waited(
                            held ? new TokenFinding.Running(null) : finding, "mysql"));
                }
                return Uni.createFrom().item(new Waited(finding, "mysql"));
            });
        });
    }

    /** A copy still running is waited for until the deadline, unless the instance is shutting down. */
    private boolean waitOn(Instant deadline) {
        return UtcTime.now().isBefore(deadline) && !wakeUps.draining();
    }

    private static Waited answer(CachedResult result, String fingerprint, String source) {
        return new Waited(new TokenFinding.Finished(result.responseFor(fingerprint)), source);
    }

    /** The wait timer's {@code outcome} tag: finished, released, stillrunning or failed. */
    private static String outcome(Waited waited) {
        if (waited == null) {
            return "failed";
        }
        if (waited.finding() instanceof TokenFinding.Finished) {
            return "finished";
        }
        return waited.finding() instanceof TokenFinding.Vacant ? "released" : "stillrunning";
    }
}
