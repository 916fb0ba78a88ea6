package io.payonce.idempotency;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.Supplier;

import jakarta.inject.Singleton;

import io.payonce.database.Database;
import io.payonce.database.UtcTime;
import io.payonce.idempotency.DuplicateMetrics.Layer;
import io.payonce.idempotency.DuplicateMetrics.Source;
import io.payonce.redis.RedisFastPath;
import io.payonce.redis.WakeUps;
import io.smallrye.mutiny.Uni;

/**
 * The one gate every entrance passes (HTTP, the queue, every money-moving operation): a copy of a request
 * either owns its token and runs the operation, or gets the first execution's answer, waiting for it
 * while it runs, on this instance or any other. Redis is a shortcut only: a cached final answer is
 * replayed without touching MySQL, and a copy that finds the token's ownership key taken goes straight to
 * waiting. The MySQL claim decides who owns the token; it is made by the operation inside its own first
 * transaction, so claim and first effect cost one commit. With Redis empty or down every copy simply
 * takes the MySQL path.
 *
 * <p>An owner finishes by handing its answer over: stored with the token in its own transaction (by the
 * operation), then cached in Redis and published to every waiter, local ones directly.
 */
@Singleton
public class IdempotencyGate {

    /** A claim can lose a race with a release or a rollback; a few tries settle that, more would hide a bug. */
    private static final int CLAIM_TRIES = 3;

    private final TokenService tokens;
    private final Waits waits;
    private final RedisFastPath redis;
    private final WakeUps wakeUps;
    private final DuplicateMetrics metrics;
    private final Database db;

    IdempotencyGate(TokenService tokens, Waits waits, RedisFastPath redis, WakeUps wakeUps, DuplicateMetrics metrics,
            Database db) {
        this.tokens = tokens;
        this.waits = waits;
        this.redis = redis;
        this.wakeUps = wakeUps;
        this.metrics = metrics;
        this.db = db;
    }

    /**
     * One copy of a request at the gate: whose it is, its idempotency key, the fingerprint of its business
     * parameters, the business number its token binds (a request or refund number), how long it waits for a
     * first execution still running, and the digest of the body it was read from (cached with its answer, so
     * that a copy of the same bytes is replayed without being parsed; null for none).
     */
    public record Entrance(String merchantId, String key, String fingerprint, String businessNo, Duration waitBound,
            String bodyDigest) {
    }

    /** What the owner of a token runs. */
    @FunctionalInterface
    public interface Operation {
        /**
         * Runs the operation as the token's claimant: claims it with {@link TokenService#claimIn} inside its
         * first transaction, and stores its answer with the token ({@link TokenService#complete}, or in the
         * statement that settles it). Fails with {@link TokenTakenException} having done nothing, or with
         * another exception having done nothing irreversible; else answers its answer and how it was stored.
         */
        Uni<OwnerAnswer> run(TokenClaim claim);
    }

    /** True while Redis answers: a copy may be replayed from its cache ahead of everything else. */
    public boolean fastPathOn() {
        return redis.available();
    }

    /**
     * What the fast path holds for a copy: the final answer to replay, if any, and whether it holds nothing
     * at all for the token (not even the first execution's interim 202, which the gate's waiting uses).
     */
    public record CacheLook(Optional<Reply> replay, boolean holdsNothing) {
    }

    /**
     * The answer Redis caches for this very request (same token, and the same body bytes or else the same
     * fingerprint), when it is final. Never executes anything. The body's digest is taken only when the cached
     * answer carries one to compare it with; {@code fingerprint} is asked only when the bytes differ from the
     * first execution's, and answers null for a body that is no replay's (the copy then goes on). Fails as
     * {@link #pass} would for an invalid token or another request's fingerprint.
     */
    public Uni<CacheLook> replayCached(String merchantId, String key, byte[] body, Supplier<String> fingerprint) {
        return tokens.check(merchantId, key)
                .flatMap(expiresAt -> redis.cached(merchantId, key))
                .map(payload -> {
                    Optional<CachedAnswer> cached = CachedAnswer.decode(payload);
                    return new CacheLook(cached.filter(CachedAnswer::isFinal).flatMap(c -> Optional
                            .ofNullable(c.sameBody(body) ? c.fingerprint() : fingerprint.get())
                            .map(f -> fromCache(c, f))), cached.isEmpty());
                });
    }

    /**
     * Passes one copy through the gate: the stored answer when the token has one (after a bounded wait while
     * its first execution runs), else {@code operation} run as the token's owner, detached from the caller,
     * and its answer handed over. {@code cacheMissed}: {@link #replayCached} has just found nothing, so the
     * cache is not asked again (a stale miss only costs the MySQL path). Fails with
     * {@link InvalidIdempotencyTokenException}, {@link IdempotencyKeyReusedException},
     * {@link RequestInProgressException} (the wait outlasted its bound and no interim answer is known),
     * {@link TemporarilyUnavailableException}, or what the operation failed with.
     */
    public Uni<Reply> pass(Entrance entrance, boolean cacheMissed, Operation operation) {
        Instant deadline = UtcTime.now().plus(entrance.waitBound());
        return tokens.check(entrance.merchantId(), entrance.key()).flatMap(expiresAt -> (cacheMissed
                ? Uni.createFrom().item(Optional.<String>empty())
                : redis.cached(entrance.merchantId(), entrance.key())).flatMap(payload -> {
                    Optional<CachedAnswer> cached = CachedAnswer.decode(payload);
                    if (cached.isPresent() && cached.get().isFinal()) {
                        return Uni.createFrom().item(fromCache(cached.get(), entrance.fingerprint()));
                    }
                    TokenClaim claim = new TokenClaim(entrance.key(), entrance.fingerprint(), entrance.businessNo(),
                            expiresAt, true);
                    if (cached.isPresent()) {
                        // the first execution answered 202 and runs on: nothing to claim, its answer to wait for
                        cached.get().responseFor(entrance.fingerprint());
                        metrics.stopped(Layer.REDIS);
                        return await(entrance, deadline, CLAIM_TRIES,
                                tries -> own(entrance, claim, operation, deadline, tries, false), Function.identity());
                    }
                    return redis.acquire(entrance.merchantId(), entrance.key()).flatMap(key -> {
                        if (key == RedisFastPath.OwnershipKey.TAKEN) {
                            metrics.stopped(Layer.REDIS);
                            return await(entrance, deadline, CLAIM_TRIES,
                                    tries -> own(entrance, claim, operation, deadline, tries, false), Function.identity());
                        }
                        return own(entrance, claim, operation, deadline, CLAIM_TRIES,
                                key == RedisFastPath.OwnershipKey.HELD);
                    });
                }));
    }

    /**
     * Hands over an answer someone other than the token's owner stored with it (reconciliation settling a
     * payment it took over): cached and published like an owner's.
     */
    public Uni<Void> handOver(String merchantId, String key, StoredResponse response) {
        return db.bounded(tokens.row(merchantId, key)).flatMap(row -> row.isEmpty()
                ? Uni.createFrom().voidItem()
                : publish(merchantId, key, new CachedAnswer(row.get().fingerprint(), response),
                        Uni.createFrom().item(row.get().expiresAt())))
                .onFailure().recoverWithNull();
    }

    /**
     * Runs the operation as the token's owner, detached from the caller (cancelling the dependent stage leaves
     * this one running), so a client or gateway that hangs up cannot cut an execution short between its
     * effect and its answer. Its answer is handed over; a copy that lost the MySQL claim and replays another's
     * answer only gives the ownership key up; on failure ownership is given up so that waiters look again.
     */
    private Uni<Reply> own(Entrance entrance, TokenClaim claim, Operation operation, Instant deadline, int triesLeft,
            boolean keyHeld) {
        Uni<Reply> owned = attempt(entrance, claim, operation, deadline, triesLeft, keyHeld)
                .call(owner -> owner.replayed() ? redis.disown(entrance.merchantId(), entrance.key())
                        : owner.answer().handedOver() ? publish(entrance.merchantId(), entrance.key(),
                                new CachedAnswer(entrance.fingerprint(), owner.answer().response(), entrance.bodyDigest()),
                                cacheUntil(entrance, claim))
                        : released(entrance))
                .map(owner -> owner.replayed() ? Reply.replay(owner.answer().response())
                        : Reply.of(owner.answer().response(), false, owner.answer().kind()))
                .onFailure().call(e -> released(entrance));
        return Uni.createFrom().completionStage(owned.subscribeAsCompletionStage().thenApply(reply -> reply));
    }

    /** The answer of a copy that went the owner's way: its operation's, or another copy's it replays. */
    private record OwnedAnswer(OwnerAnswer answer, boolean replayed) {

        static OwnedAnswer ran(OwnerAnswer answer) {
            return new OwnedAnswer(answer, false);
        }

        static OwnedAnswer replayed(Reply reply) {
            return new OwnedAnswer(OwnerAnswer.stored(reply.response()), true);
        }
    }

    /**
     * Runs the operation when this copy's claim wins; otherwise replays what the token holds or waits for it.
     */
    private Uni<OwnedAnswer> attempt(Entrance entrance, TokenClaim claim, Operation operation, Instant deadline,
            int triesLeft, boolean keyHeld) {
        return operation.run(claim)
                .map(OwnedAnswer::ran)
                .onFailure(TemporarilyUnavailableException.class).recoverWithUni(unavailable -> unlessHeld(entrance,
                        deadline, keyHeld, (TemporarilyUnavailableException) unavailable))
                .onFailure(TokenTakenException.class).recoverWithUni(taken -> inProgressWhenFailing(db.bounded(
                        tokens.find(entrance.merchantId(), entrance.key(), entrance.fingerprint())))
                        .flatMap(finding -> switch (finding) {
                            case TokenFinding.Vacant vacant -> triesLeft > 0
                                    ? attempt(entrance, claim.onExistingRow(), operation, deadline, triesLeft - 1, keyHeld)
                                    : await(entrance, deadline, 0, tries -> Uni.createFrom().failure(
                                            new RequestInProgressException()), OwnedAnswer::replayed);
                            case TokenFinding.Finished finished -> {
                                metrics.stopped(Layer.TOKEN);
                                yield replay(finished.response(), Source.MYSQL).map(OwnedAnswer::replayed);
                            }
                            case TokenFinding.Running running -> {
                                metrics.stopped(Layer.TOKEN);
                                // released meanwhile, this copy tries its claim again
                                yield await(entrance, deadline, triesLeft, tries -> attempt(entrance,
                                        claim.onExistingRow(), operation, deadline, tries, false), OwnedAnswer::replayed);
                            }
                        }));
    }

    /**
     * This copy's run failed before anything irreversible, its own claim rolled back or released; a 503 says
     * that nothing can be charged later under the request, which is true only while nobody else holds the
     * token. So the token is read as the last claim left it (a claim in flight, whose COMMIT may still come,
     * is waited for): vacant, the 503 stands; held, this copy waits for that execution's answer; finished, it
     * replays it. When MySQL cannot be read, the 503 stands only for a copy that set the token's Redis
     * ownership key itself ({@code keyHeld}: no other copy held one, and an owner holds its key for longer than
     * it can run); any other copy cannot know, and is told the request may be in progress (a 409 with
     * {@code Retry-After}). Either is retryable, and nothing is charged on its word.
     */
    private Uni<OwnedAnswer> unlessHeld(Entrance entrance, Instant deadline, boolean keyHeld,
            TemporarilyUnavailableException unavailable) {
        // once more on a failure: the failure that ended this copy's run (a connection reset) may have left the
        // pool a connection that fails at once, and a fresh one answers; both within one database timeout
        return db.bounded(tokens.findLatest(entrance.merchantId(), entrance.key(), entrance.fingerprint())
                .onFailure(e -> !isRefusal(e)).retry().atMost(1))
                .onFailure(e -> !isRefusal(e))
                .transform(e -> keyHeld ? unavailable : new RequestInProgressException())
                .flatMap(finding -> switch (finding) {
                    case TokenFinding.Vacant vacant -> Uni.createFrom().<OwnedAnswer>failure(unavailable);
                    case TokenFinding.Finished finished -> replay(finished.response(), Source.MYSQL)
                            .map(OwnedAnswer::replayed);
                    case TokenFinding.Running running -> await(entrance, deadline, 0,
                            tries -> Uni.createFrom().failure(new RequestInProgressException()), OwnedAnswer::replayed);
                });
    }

    /**
     * Waits for the first execution: its answer is replayed; still running at the deadline, its interim 202
     * is answered again when one is known, else {@link RequestInProgressException}; released by its owner
     * before anything irreversible, this copy may claim it ({@code onVacant}), a few times at most, so that
     * copies losing every race to a release cannot go round for ever.
     */
    private <T> Uni<T> await(Entrance entrance, Instant deadline, int triesLeft, IntFunction<Uni<T>> onVacant,
            Function<Reply, T> answered) {
        return inProgressWhenFailing(waits.await(entrance.merchantId(), entrance.key(), entrance.fingerprint(), deadline))
                .flatMap(waited -> waited.finding() instanceof TokenFinding.Vacant
                        ? (triesLeft > 0 ? onVacant.apply(triesLeft - 1)
                                : Uni.createFrom().failure(new RequestInProgressException()))
                        : answerWaited(waited).map(answered));
    }

    /** A wait that ended with the first execution's answer, or at its deadline while it still runs. */
    private Uni<Reply> answerWaited(Waits.Waited waited) {
        return switch (waited.finding()) {
            case TokenFinding.Finished finished -> replay(finished.response(), waited.source());
            case TokenFinding.Running running -> running.interim() != null
                    ? replay(running.interim(), waited.source())
                    : Uni.createFrom().failure(new RequestInProgressException());
            case TokenFinding.Vacant vacant -> Uni.createFrom().failure(new RequestInProgressException());
        };
    }

    /**
     * The answer handed over: to this instance's waiters at once, and through Redis (cached no longer than
     * the token lives, and published) to every instance's. An interim 202 is cached too, as what the first
     * execution answered so far: no replay takes it for a final answer.
     */
    private Uni<Void> publish(String merchantId, String key, CachedAnswer answer, Uni<Instant> cacheUntil) {
        String payload = answer.encode();
        wakeUps.wakeLocal(merchantId, key, Optional.of(payload));
        if (!redis.available()) {
            return Uni.createFrom().voidItem();
        }
        return cacheUntil.flatMap(expiresAt -> redis.handOver(merchantId, key, payload,
                Duration.between(UtcTime.now(), expiresAt)));
    }

    /** Ownership given up without an answer: waiters look again, and may claim the token. */
    private Uni<Void> released(Entrance entrance) {
        wakeUps.wakeLocal(entrance.merchantId(), entrance.key(), Optional.empty());
        return redis.released(entrance.merchantId(), entrance.key());
    }

    /**
     * How long the answer may be cached: no longer than the token's row lives, so the copy never outlives
     * what it copies. An issued token carries its expiry, which its row repeats; a client key's row got its
     * expiry at its first claim, which a later request (a retry after a release) cannot derive from its own
     * clock, so it is read. Unknown, nothing is cached.
     */
    private Uni<Instant> cacheUntil(Entrance entrance, TokenClaim claim) {
        if (TokenFormat.isIssued(entrance.key())) {
            return Uni.createFrom().item(claim.expiresAt());
        }
        return db.bounded(tokens.storedExpiry(entrance.merchantId(), entrance.key()))
                .onFailure().recoverWithItem(Optional.empty())
                .map(expiresAt -> expiresAt.orElseGet(UtcTime::now));
    }

    /** Called inside a stage: a fingerprint mismatch thrown here fails the stage. */
    private Reply fromCache(CachedAnswer cached, String fingerprint) {
        StoredResponse response = cached.responseFor(fingerprint);
        metrics.stopped(Layer.REDIS);
        metrics.replayed(Source.REDIS);
        return Reply.replay(response);
    }

    private Uni<Reply> replay(StoredResponse response, Source source) {
        metrics.replayed(source);
        return Uni.createFrom().item(Reply.replay(response));
    }

    /**
     * A database failure while another copy may hold the token: this copy cannot know whether that one will
     * charge, so it is told the request may be in progress (409, retryable), never that nothing was charged.
     */
    private static <T> Uni<T> inProgressWhenFailing(Uni<T> call) {
        return call.onFailure(e -> !isRefusal(e)).transform(e -> new RequestInProgressException());
    }

    /** The gate's own refusals of a copy, which a database failure must not be mistaken for. */
    private static boolean isRefusal(Throwable e) {
        return e instanceof InvalidIdempotencyTokenException || e instanceof IdempotencyKeyReusedException
                || e instanceof RequestInProgressException;
    }

}
