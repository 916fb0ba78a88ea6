package io.payonce.payment;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import jakarta.inject.Singleton;

import io.payonce.database.Database;
import io.payonce.database.UtcTime;
import io.payonce.idempotency.DuplicateWaiter;
import io.payonce.idempotency.IdempotencyKeyReusedException;
import io.payonce.idempotency.InvalidIdempotencyTokenException;
import io.payonce.idempotency.RequestInProgressException;
import io.payonce.idempotency.StoredResponse;
import io.payonce.idempotency.TokenFormat;
import io.payonce.idempotency.TokenFinding;
import io.payonce.idempotency.TokenService;
import io.payonce.idempotency.TokenTakenException;
import io.payonce.idempotency.TokenClaim;
import io.payonce.payment.PayMetrics.Layer;
import io.payonce.redis.CachedResult;
import io.payonce.redis.RedisFastPath;
import io.smallrye.mutiny.Uni;

/**
 * The pay use case. Redis first, as a shortcut only: a cached answer is replayed without touching
 * MySQL, and a copy that finds the token's ownership key taken goes straight to waiting. Then layer 1
 * (the MySQL token claim) decides who executes; the owner runs layers 2 and 3 through
 * {@link PaymentExecutor}; every other copy replays the stored answer or waits for it. With Redis
 * empty or down every copy simply takes the MySQL path.
 */
@Singleton
public class PayService {

    private static final int CLAIM_TRIES = 3;

    private final TokenService tokens;
    private final PaymentExecutor executor;
    private final DuplicateWaiter waiter;
    private final RedisFastPath redis;
    private final PayMetrics metrics;
    private final Database db;

    PayService(TokenService tokens, PaymentExecutor executor, DuplicateWaiter waiter, RedisFastPath redis,
            PayMetrics metrics, Database db) {
        this.tokens = tokens;
        this.executor = executor;
        this.waiter = waiter;
        this.redis = redis;
        this.metrics = metrics;
        this.db = db;
    }

    /**
     * The answer Redis caches for this very request (same token, same fingerprint); empty when it holds
     * none. Never executes anything. Fails as {@link #pay} would for an invalid token or another
     * request's fingerprint.
     */
    public Uni<Optional<PayReply>> replayCached(PayCommand cmd) {
        String fingerprint = cmd.fingerprint();
        return tokens.check(cmd.merchantId(), cmd.token())
                .flatMap(expiresAt -> redis.cached(cmd.merchantId(), cmd.token()))
                .flatMap(cached -> cached.isPresent() ? fromCache(cached.get(), fingerprint).map(Optional::of)
                        : Uni.createFrom().item(Optional.<PayReply>empty()));
    }

    /** Pays once per token; a duplicate waits up to {@code waitBound} for the first execution's answer. */
    public Uni<PayReply> pay(PayCommand cmd, Duration waitBound) {
        return pay(cmd, waitBound, false);
    }

    /**
     * {@link #pay}, skipping the cache lookup when {@code cacheMissed}: {@link #replayCached} has just
     * found no answer there (a stale miss only costs the MySQL path).
     */
    public Uni<PayReply> pay(PayCommand cmd, Duration waitBound, boolean cacheMissed) {
        String fingerprint = cmd.fingerprint();
        Instant deadline = UtcTime.now().plus(waitBound);
        return tokens.check(cmd.merchantId(), cmd.token())
                .flatMap(expiresAt -> (cacheMissed ? Uni.createFrom().item(Optional.<CachedResult>empty())
                        : redis.cached(cmd.merchantId(), cmd.token())).flatMap(cached -> {
                    if (cached.isPresent()) {
                        return fromCache(cached.get(), fingerprint);
                    }
                    TokenClaim claim = new TokenClaim(cmd.token(), fingerprint, cmd.requestNo(), expiresAt, true);
                    return redis.acquire(cmd.merchantId(), cmd.token()).flatMap(mayClaim -> {
                        if (!mayClaim) {
                            metrics.stopped(Layer.REDIS);
                            return awaitFirst(cmd, claim, deadline, CLAIM_TRIES);
                        }
                        return own(cmd, claim, deadline, CLAIM_TRIES);
                    });
                }));
    }

    /**
     * Executes as the token's owner, whether this copy came first or takes over a token its owner
     * released: detached from the HTTP request (cancelling the dependent stage leaves this one running), so
     * a client or gateway that hangs up cannot cut an execution short between its charge and its
     * settlement; its answer is handed over to Redis for the duplicates (a copy that lost the MySQL claim
     * and replays another's answer only gives ownership up), and on failure ownership is given up so that
     * they look again.
     */
    private Uni<PayReply> own(PayCommand cmd, TokenClaim claim, Instant deadline, int triesLeft) {
        Uni<PayReply> owned = attempt(cmd, claim, deadline, triesLeft)
                .call(reply -> reply.replayed() ? redis.disown(cmd.merchantId(), cmd.token()) : handOver(cmd, claim, reply))
                .onFailure().call(e -> redis.released(cmd.merchantId(), cmd.token()));
        return Uni.createFrom().completionStage(owned.subscribeAsCompletionStage().thenApply(reply -> reply));
    }

    /** A final answer is cached and published to every waiter; an interim one only gives up ownership. */
    private Uni<Void> handOver(PayCommand cmd, TokenClaim claim, PayReply reply) {
        if (!redis.available()) {
            return Uni.createFrom().voidItem();
        }
        if (reply.response().status() == 202) {
            return redis.disown(cmd.merchantId(), cmd.token());
        }
        return cacheUntil(cmd, claim).flatMap(expiresAt -> redis.finished(cmd.merchantId(), cmd.token(),
                claim.fingerprint(), reply.response(), expiresAt));
    }

    /**
     * How long the answer may be cached: no longer than the token's row lives, so the copy never outlives
     * what it copies. An issued token carries its expiry, which its row repeats; a client key's row got its
     * expiry at its first claim, which a later request (a retry after a release) cannot derive from its own
     * clock, so it is read. Unknown, nothing is cached.
     */
    private Uni<Instant> cacheUntil(PayCommand cmd, TokenClaim claim) {
        if (TokenFormat.isIssued(cmd.token())) {
            return Uni.createFrom().item(claim.expiresAt());
        }
        return db.bounded(tokens.storedExpiry(cmd.merchantId(), cmd.token()))
                .onFailure().recoverWithItem(Optional.empty())
                .map(expiresAt -> expiresAt.orElseGet(UtcTime::now));
    }

    /** Called inside a stage: a fingerprint mismatch thrown here fails the stage. */
    private Uni<PayReply> fromCache(CachedResult cached, String fingerprint) {
        StoredResponse response = cached.responseFor(fingerprint);
        metrics.stopped(Layer.REDIS);
        return replay(response, "redis");
    }

    /**
     * Executes the request when this copy's claim wins (it is part of the execution's first transaction);
     * otherwise replays what the token holds or waits for it. A claim can lose a race with a release or a
     * rollback; a few tries settle that, more would hide a bug.
     */
    private Uni<PayReply> attempt(PayCommand cmd, TokenClaim claim, Instant deadline, int triesLeft) {
        return executor.execute(cmd, Optional.of(claim))
                .map(response -> new PayReply(response, false))
                .onFailure(TokenTakenException.class).recoverWithUni(taken -> db.bounded(
                        tokens.find(cmd.merchantId(), cmd.token(), claim.fingerprint()))
                        .onFailure(PayService::isInfrastructure)
                        .transform(e -> new TemporarilyUnavailableException("database unavailable", e))
                        .flatMap(finding -> {
                            if (finding instanceof TokenFinding.Vacant) {
                                return triesLeft > 0
                                        ? attempt(cmd, claim.onExistingRow(), deadline, triesLeft - 1)
                                        : awaitFirst(cmd, claim, deadline, 0);
                            }
                            metrics.stopped(Layer.TOKEN);
                            if (finding instanceof TokenFinding.Finished finished) {
                                return replay(finished.response(), "mysql");
                            }
                            return awaitFirst(cmd, claim, deadline, triesLeft);
                        }));
    }

    private Uni<PayReply> awaitFirst(PayCommand cmd, TokenClaim claim, Instant deadline, int triesLeft) {
        return waiter.await(cmd.merchantId(), cmd.token(), claim.fingerprint(), deadline)
                .onFailure(PayService::isInfrastructure)
                .transform(e -> new TemporarilyUnavailableException("database unavailable", e))
                .flatMap(waited -> {
                    if (waited.finding() instanceof TokenFinding.Finished finished) {
                        return replay(finished.response(), waited.source());
                    }
                    if (waited.finding() instanceof TokenFinding.Vacant) {
                        // the owner gave up before anything irreversible: this copy may execute it, as an owner,
                        // a few times at most, so that copies losing every race to a release cannot go round for ever
                        return triesLeft > 0 ? own(cmd, claim, deadline, triesLeft - 1)
                                : Uni.createFrom().failure(new RequestInProgressException());
                    }
                    StoredResponse interim = ((TokenFinding.Running) waited.finding()).interim();
                    if (interim != null) {
                        return replay(interim, "mysql");
                    }
                    return Uni.createFrom().failure(new RequestInProgressException());
                });
    }

    private Uni<PayReply> replay(StoredResponse response, String source) {
        metrics.replayed(source);
        return Uni.createFrom().item(new PayReply(response, true));
    }

    private static boolean isInfrastructure(Throwable e) {
        return !(e instanceof InvalidIdempotencyTokenException || e instanceof IdempotencyKeyReusedException
                || e instanceof RequestInProgressException);
    }
}
