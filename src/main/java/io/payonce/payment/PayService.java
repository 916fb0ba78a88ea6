package io.payonce.payment;

import java.time.Duration;
import java.time.Instant;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.idempotency.Claim;
import io.payonce.idempotency.DuplicateWaiter;
import io.payonce.idempotency.DuplicateWaiter.Waited;
import io.payonce.idempotency.IdempotencyKeyReusedException;
import io.payonce.idempotency.InvalidIdempotencyTokenException;
import io.payonce.idempotency.RequestInProgressException;
import io.payonce.idempotency.StoredResponse;
import io.payonce.idempotency.TokenService;
import io.payonce.mysql.UtcTime;
import io.payonce.payment.PayMetrics.Layer;
import io.smallrye.mutiny.Uni;

/**
 * The pay use case: layer 1 (the token) decides who executes; the owner runs layers 2 and 3 through
 * {@link PaymentExecutor}; every other copy replays the stored answer or waits for it.
 */
@ApplicationScoped
public class PayService {

    private final TokenService tokens;
    private final PaymentExecutor executor;
    private final DuplicateWaiter waiter;
    private final PayMetrics metrics;

    PayService(TokenService tokens, PaymentExecutor executor, DuplicateWaiter waiter, PayMetrics metrics) {
        this.tokens = tokens;
        this.executor = executor;
        this.waiter = waiter;
        this.metrics = metrics;
    }

    /** Pays once per token; a duplicate waits up to {@code waitBound} for the first execution's answer. */
    public Uni<PayReply> pay(PayCommand cmd, Duration waitBound) {
        return attempt(cmd, cmd.fingerprint(), UtcTime.now().plus(waitBound));
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
                        return replay(finished.response());
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
        return waiter.await(cmd.merchantId(), cmd.token(), deadline)
                .onFailure().transform(e -> new TemporarilyUnavailableException("database unavailable", e))
                .flatMap(waited -> {
                    if (waited instanceof Waited.Finished finished) {
                        return replay(finished.response());
                    }
                    if (waited instanceof Waited.Released) {
                        // the owner gave up before anything irreversible: this copy may execute it
                        return attempt(cmd, fingerprint, deadline);
                    }
                    StoredResponse interim = ((Waited.StillRunning) waited).interim();
                    if (interim != null) {
                        return replay(interim);
                    }
                    return Uni.createFrom().failure(new RequestInProgressException());
                });
    }

    private Uni<PayReply> replay(StoredResponse response) {
        metrics.replayed("mysql");
        return Uni.createFrom().item(new PayReply(response, true));
    }

    private static boolean isInfrastructure(Throwable e) {
        return !(e instanceof InvalidIdempotencyTokenException || e instanceof IdempotencyKeyReusedException);
    }
}
