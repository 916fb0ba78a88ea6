package io.payonce.payment;

import java.time.Duration;
import java.time.Instant;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.idempotency.CachedResult;
import io.payonce.idempotency.Claim;
import io.payonce.idempotency.DuplicateWaiter;
import io.payonce.idempotency.DuplicateWaiter.Waited;
import io.payonce.idempotency.IdempotencyKeyReusedException;
import io.payonce.idempotency.InvalidIdempotencyTokenException;
import io.payonce.idempotency.RedisFastPath;
import io.payonce.idempotency.RequestInProgressException;
import io.payonce.idempotency.StoredResponse;
import io.payonce.idempotency.TokenService;
import io.payonce.mysql.UtcTime;
import io.payonce.payment.PayMetrics.Layer;
import io.smallrye.mutiny.Uni;

/**
 * The pay use case. Redis first, as a shortcut only: a cached answer is replayed without touching
 * MySQL, and a copy that finds the token's ownership key taken goes straight to waiting. Then layer 1
 * (the MySQL token claim) decides who executes; the owner runs layers 2 and 3 through
 * {@link PaymentExecutor}; every other copy replays the stored answer or waits for it. With Redis
 * empty or down every copy simply takes the MySQL path.
 */
@ApplicationScoped
public class PayService {

    private final TokenService tokens;
    private final PaymentExecutor executor;
    private final DuplicateWaiter waiter;
    private final RedisFastPath redis;
    private final PayMetrics metrics;

    PayService(TokenService tokens, PaymentExecutor executor, DuplicateWaiter waiter, RedisFastPath redis,
            PayMetrics metrics) {
        this.tokens = tokens;
        this.executor = executor;
        this.waiter = waiter;
        this.redis = redis;
        this.metrics = metrics;
    }

    /** Pays once per token; a duplicate waits up to {@code waitBound} for the first execution's answer. */
    public Uni<PayReply> pay(PayCommand cmd, Duration waitBound) {
        tokens.checkFormat(cmd.token());
        String fingerprint = cmd.fingerprint();
        Instant deadline = UtcTime.now().plus(waitBound);
        return redis.cached(cmd.merchantId(), cmd.token()).flatMap(cached -> {
            if (cached != null && cached.isAnswer()) {
                return fromCache(cached, fingerprint);
            }
            return redis.acquire(cmd.merchantId(), cmd.token()).flatMap(mayClaim -> {
                if (!mayClaim) {
                    metrics.stopped(Layer.REDIS);
                    return awaitFirst(cmd, fingerprint, deadline);
                }
                Uni<PayReply> owned = attempt(cmd, fingerprint, deadline)
                        .call(reply -> handOver(cmd, fingerprint, reply))
                        .onFailure().call(e -> redis.released(cmd.merchantId(), cmd.token()));
                // detached from the HTTP request (cancelling the dependent stage leaves this one running): a client (or gateway) that hangs up must not cut an
                // execution short between its charge and its settlement; duplicates wait for it
                return Uni.createFrom().completionStage(owned.subscribeAsCompletionStage().thenApply(reply -> reply));
            });
        });
    }

    /** A final answer is cached and published to every waiter; an interim one only gives up ownership. */
    private Uni<Void> handOver(PayCommand cmd, String fingerprint, PayReply reply) {
        if (!redis.available()) {
            return Uni.createFrom().voidItem();
        }
        if (reply.response().status() == 202) {
            return redis.disown(cmd.merchantId(), cmd.token());
        }
        return tokens.expiresAt(cmd.merchantId(), cmd.token())
                .onFailure().recoverWithItem(UtcTime.now())
                .flatMap(expiresAt -> redis.finished(cmd.merchantId(), cmd.token(), fingerprint, reply.response(),
                        expiresAt));
    }

    private Uni<PayReply> fromCache(CachedResult cached, String fingerprint) {
        if (!fingerprint.equals(cached.fingerprint())) {
            return Uni.createFrom().failure(new IdempotencyKeyReusedException());
        }
        metrics.stopped(Layer.REDIS);
        return replay(cached.response(), "redis");
    }

    private Uni<PayReply> attempt(PayCommand cmd, String fingerprint, Instant deadline) {
        return tokens.claim(cmd.merchantId(), cmd.token(), fingerprint, cmd.requestNo())
                .onFailure(PayService::isInfrastructure)
                .transform(e -> new TemporarilyUnavailableException("database unavailable", e))
                .flatMap(claim -> {
                    if (claim instanceof Claim.Owned) {
                        return execute(cmd, fingerprint, deadline);
                    }
                    metrics.stopped(Layer.TOKEN);
                    if (claim instanceof Claim.Finished finished) {
                        return replay(finished.response(), "mysql");
                    }
                    return awaitFirst(cmd, fingerprint, deadline);
                });
    }

    private Uni<PayReply> execute(PayCommand cmd, String fingerprint, Instant deadline) {
        return executor.execute(cmd)
                .map(executed -> new PayReply(executed.response(), false))
                .onFailure(TemporarilyUnavailableException.class).call(e -> tokens
                        .release(cmd.merchantId(), cmd.token())
                        // a release that fails too leaves the token to lease expiry
                        .onFailure().recoverWithNull())
                .onFailure(AlreadySettledException.class).recoverWithUni(e -> awaitFirst(cmd, fingerprint, deadline));
    }

    private Uni<PayReply> awaitFirst(PayCommand cmd, String fingerprint, Instant deadline) {
        return waiter.await(cmd.merchantId(), cmd.token(), fingerprint, deadline)
                .onFailure(PayService::isInfrastructure)
                .transform(e -> new TemporarilyUnavailableException("database unavailable", e))
                .flatMap(waited -> {
                    if (waited instanceof Waited.Finished finished) {
                        return replay(finished.response(), finished.source());
                    }
                    if (waited instanceof Waited.Released) {
                        // the owner gave up before anything irreversible: this copy may execute it
                        return attempt(cmd, fingerprint, deadline);
                    }
                    StoredResponse interim = ((Waited.StillRunning) waited).interim();
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
