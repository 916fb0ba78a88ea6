package io.payonce.idempotency;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.quarkus.runtime.Startup;
import io.payonce.database.Database;
import io.payonce.database.UtcTime;
import io.payonce.idempotency.DuplicateMetrics.Source;
import io.payonce.observability.LatencyHistograms;
import io.payonce.redis.RedisFastPath;
import io.payonce.redis.WakeUps;
import io.smallrye.mutiny.Uni;

/**
 * Where duplicates wait for the first execution's answer, on whichever instance it runs. Waits are
 * coalesced per token on each instance: one watch registers for the token's wake-up and looks at the stored
 * answer (the Redis cache, then the MySQL row) for all of the token's local waiters, and hands each what
 * the row means to its own request. So a thousand copies of one request cost one read per poll, not a
 * thousand. The MySQL row is the authority: without Redis a watch only polls faster and wakes later.
 */
@Startup
@ApplicationScoped
public class Waits {

    /** Without pub/sub: poll the row soon and often. */
    private static final Duration FIRST_POLL = Duration.ofMillis(10);
    private static final Duration MAX_POLL = Duration.ofMillis(250);
    /** With pub/sub the wake-up comes first; polling is only a safety net. */
    private static final Duration MAX_POLL_LISTENING = Duration.ofSeconds(1);
    /** How long past its deadline a copy waits for its watch's first look, within the contract's second. */
    private static final Duration FIRST_LOOK_GRACE = Duration.ofMillis(900);
    /** How a wait ended, as its timer's {@code outcome} tag. */
    private static final List<String> OUTCOMES = List.of("finished", "released", "stillrunning", "failed");

    private final TokenRepository tokens;
    private final RedisFastPath redis;
    private final WakeUps wakeUps;
    private final MeterRegistry meters;
    /** The wait's duration by how it ended, each a latency histogram, from the start. */
    private final Map<String, Timer> waited = new HashMap<>();
    private final Database db;
    private final ConcurrentHashMap<Key, Watch> watches = new ConcurrentHashMap<>();
    private final AtomicInteger waiting = new AtomicInteger();

    Waits(TokenRepository tokens, RedisFastPath redis, WakeUps wakeUps, MeterRegistry meters, Database db) {
        this.tokens = tokens;
        this.redis = redis;
        this.wakeUps = wakeUps;
        this.meters = meters;
        this.db = db;
        Gauge.builder("payonce.idempotency.waiters", waiting, AtomicInteger::get)
                .description("copies of requests waiting on this instance for a first execution's answer")
                .strongReference(true).register(meters);
        for (String outcome : OUTCOMES) {
            waited.put(outcome, LatencyHistograms.timer("payonce.idempotency.wait")
                    .description("how long copies of requests waited for a first execution's answer")
                    .tag("outcome", outcome).register(meters));
        }
    }

    /**
     * How a wait ended: what the token held for this copy when it was last looked at, and where that was
     * read (redis, pubsub, mysql, or deadline). {@link TokenFinding.Running} means the deadline came first
     * (its interim is the first execution's 202, when one was seen); {@link TokenFinding.Vacant} that the
     * owner released the token, so the waiter may claim it.
     */
    public record Waited(TokenFinding finding, Source source) {
    }

    private record Key(String merchantId, String token) {
    }

    /** One waiting copy: its request's fingerprint and where its answer goes. */
    private record Waiter(String fingerprint, CompletableFuture<Waited> answer) {
    }

    /**
     * Waits for the token's first execution. Fails with {@link IdempotencyKeyReusedException} when the token
     * turns out to be bound to another fingerprint, {@link InvalidIdempotencyTokenException} once it has
     * expired.
     */
    public Uni<Waited> await(String merchantId, String token, String fingerprint, Instant deadline) {
        Timer.Sample sample = Timer.start(meters);
        Duration left = Duration.between(UtcTime.now(), deadline);
        Waiter waiter = new Waiter(fingerprint, new CompletableFuture<>());
        Key key = new Key(merchantId, token);
        Watch watch = join(key, waiter);
        long looksAtJoin = watch.looks.get();
        CompletableFuture<Void> nextLook = watch.lookDone;
        waiting.incrementAndGet();
        // copies: a Uni cancelled by its timeout cancels the future it was made from
        return Uni.createFrom().completionStage(waiter.answer().copy())
                // the wait ends at its deadline with what the watch last saw, however the database behaves: a
                // look the database holds up (for up to its timeout) answers nobody late
                .ifNoItem().after(left.isNegative() || left.isZero() ? Duration.ofMillis(1) : left)
                .recoverWithUni(() -> (watch.looks.get() > looksAtJoin ? Uni.createFrom().voidItem()
                        // a copy whose wait is over before its watch looked once (a wait of 0) gets one look
                        : Uni.createFrom().completionStage(nextLook.copy()).ifNoItem().after(FIRST_LOOK_GRACE)
                                .recoverWithItem((Void) null))
                        .flatMap(looked -> waiter.answer().isDone() ? Uni.createFrom().completionStage(waiter.answer().copy())
                                : Uni.createFrom().item(() -> new Waited(new TokenFinding.Running(
                                        watch.interimFor(fingerprint)), Source.DEADLINE))))
                .onTermination().invoke(() -> {
                    waiting.decrementAndGet();
                    watch.waiters.remove(waiter);
                })
                .onItemOrFailure().invoke((ended, failure) -> sample.stop(waited.get(outcome(ended))));
    }

    /** Adds the waiter to the token's watch, starting one when there is none. */
    private Watch join(Key key, Waiter waiter) {
        Watch watch = watches.compute(key, (k, current) -> {
            Watch joined = current != null ? current : new Watch(k);
            joined.waiters.add(waiter);
            return joined;
        });
        if (watch.started.compareAndSet(false, true)) {
            watch.round(FIRST_POLL);
        }
        return watch;
    }

    /** The one watch of a token on this instance, polling and listening for all its local waiters. */
    private final class Watch {
        final Key key;
        final Set<Waiter> waiters = ConcurrentHashMap.newKeySet();
        final AtomicBoolean started = new AtomicBoolean();
        /**
         * The first execution's interim answer (its 202) with the fingerprint its token is bound to, once any
         * look saw one; shared by waiters that may carry other fingerprints.
         */
        volatile CachedAnswer interim;
        /** Looks finished so far, and the one under way or next, for a waiter that needs a look before it ends. */
        final java.util.concurrent.atomic.AtomicLong looks = new java.util.concurrent.atomic.AtomicLong();
        volatile CompletableFuture<Void> lookDone = new CompletableFuture<>();

        Watch(Key key) {
            this.key = key;
        }

        /** One look for every waiter, then a sleep until a wake-up or the next poll, while anyone waits. */
        void round(Duration delay) {
            if (ended()) {
                return;
            }
            CompletableFuture<Optional<String>> wake = wakeUps.register(key.merchantId(), key.token());
            // a look that failed (the database or Redis not answering) answers nobody: the waiters wait on, to
            // their deadline at most, where one whose first execution answered 202 gets that 202 again
            look().onFailure().recoverWithItem(Optional.empty()).invoke(this::looked).flatMap(row -> {
                Duration cap = wakeUps.listening() ? MAX_POLL_LISTENING : MAX_POLL;
                Duration next = delay.multipliedBy(2).compareTo(cap) < 0 ? delay.multipliedBy(2) : cap;
                return Uni.createFrom().completionStage(wake).ifNoItem().after(delay).recoverWithItem(Optional.empty())
                        .map(notice -> {
                            notice.flatMap(payload -> CachedAnswer.decode(Optional.of(payload)))
                                    .ifPresent(answer -> deliver(answer, Source.PUBSUB));
                            return next;
                        });
            }).onTermination().invoke(() -> wakeUps.unregister(key.merchantId(), key.token(), wake))
                    .subscribe().with(this::round, failure -> round(MAX_POLL));
        }

        /**
         * The interim answer for a waiter with {@code fingerprint}, or null when none was seen: checked against the
         * fingerprint first, so that a copy of another request whose every look at the row failed is refused
         * ({@link IdempotencyKeyReusedException}), never handed the first request's 202.
         */
        StoredResponse interimFor(String fingerprint) {
            CachedAnswer seen = interim;
            return seen == null ? null : seen.responseFor(fingerprint);
        }

        private void looked() {
            CompletableFuture<Void> done = lookDone;
            lookDone = new CompletableFuture<>();
            looks.incrementAndGet();
            done.complete(null);
        }

        /** True, and the watch gone, once no copy waits on it: a later copy starts a new one. */
        private boolean ended() {
            return watches.computeIfPresent(key, (k, current) -> current == this && waiters.isEmpty() ? null : current)
                    != this;
        }

        /** Looks at the cached answer, else at the row, and answers every waiter it settles. */
        private Uni<Optional<TokenRow>> look() {
            return redis.cached(key.merchantId(), key.token()).flatMap(payload -> {
                Optional<CachedAnswer> cached = CachedAnswer.decode(payload);
                if (cached.isPresent() && cached.get().isFinal()) {
                    deliver(cached.get(), Source.REDIS);
                    return Uni.createFrom().item(Optional.<TokenRow>empty());
                }
                cached.ifPresent(interimAnswer -> interim = interimAnswer);
                return db.bounded(tokens.find(key.merchantId(), key.token())).flatMap(row -> (row.isPresent()
                        ? Uni.createFrom().item(false)
                        // no row yet: while a copy holds the Redis ownership key its first transaction is under way
                        : redis.owned(key.merchantId(), key.token()))
                        .invoke(opening -> deliver(row, opening))
                        .replaceWith(row));
            });
        }

        /**
         * What the row (or its absence, while a copy is {@code opening} it) means to each waiter; those still
         * running keep waiting.
         */
        private void deliver(Optional<TokenRow> row, boolean opening) {
            Instant now = UtcTime.now();
            boolean draining = wakeUps.draining();
            for (Waiter waiter : waiters) {
                TokenFinding finding;
                try {
                    finding = opening ? new TokenFinding.Running(null)
                            : TokenFinding.of(row, waiter.fingerprint(), now);
                } catch (RuntimeException refused) {
                    waiter.answer().completeExceptionally(refused);
                    continue;
                }
                if (finding instanceof TokenFinding.Running running) {
                    if (running.interim() != null) {
                        // the row's fingerprint, which this waiter's matched
                        interim = new CachedAnswer(waiter.fingerprint(), running.interim());
                    }
                    if (!draining) {
                        continue;
                    }
                    try {
                        finding = new TokenFinding.Running(interimFor(waiter.fingerprint()));
                    } catch (RuntimeException refused) {
                        waiter.answer().completeExceptionally(refused);
                        continue;
                    }
                }
                waiter.answer().complete(new Waited(finding, Source.MYSQL));
            }
        }

        private void deliver(CachedAnswer answer, Source source) {
            if (!answer.isFinal()) {
                interim = answer;
                return;
            }
            for (Waiter waiter : waiters) {
                try {
                    waiter.answer().complete(new Waited(new TokenFinding.Finished(answer.responseFor(waiter.fingerprint())),
                            source));
                } catch (RuntimeException refused) {
                    waiter.answer().completeExceptionally(refused);
                }
            }
        }
    }

    /** The wait timer's {@code outcome} tag, one of {@link #OUTCOMES}. */
    private static String outcome(Waited waited) {
        if (waited == null) {
            return "failed";
        }
        return switch (waited.finding()) {
            case TokenFinding.Finished finished -> "finished";
            case TokenFinding.Vacant vacant -> "released";
            case TokenFinding.Running running -> "stillrunning";
        };
    }
}
