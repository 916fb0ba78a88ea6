package io.payonce.payment;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

import jakarta.inject.Singleton;

import io.payonce.database.Database;
import io.payonce.idempotency.IdempotencyGate;
import io.payonce.idempotency.Reply;
import io.payonce.observability.LogContext;
import io.smallrye.mutiny.Uni;

/**
 * The pay use case, top to bottom: the request passes the idempotency gate, which replays the first
 * execution's answer to a copy (after a bounded wait while it runs) or lets the copy own its token; the
 * owner executes the payment ({@link PaymentExecutor}: the token's claim, the record and the order's move
 * in one transaction, then the channel), and the gate hands its answer over to every waiting copy. Each call
 * names its merchant and request number in the log context, whichever entrance it came by.
 */
@Singleton
public class PayService {

    private final IdempotencyGate gate;
    private final PaymentExecutor executor;
    private final PaymentRepository payments;
    private final Database db;

    PayService(IdempotencyGate gate, PaymentExecutor executor, PaymentRepository payments, Database db) {
        this.gate = gate;
        this.executor = executor;
        this.payments = payments;
        this.db = db;
    }

    /** True while a finished request may be replayed from the fast path, ahead of everything else. */
    public boolean replaysFast() {
        return gate.fastPathOn();
    }

    /**
     * The final answer the fast path holds for this very request, if any: a copy of the first execution's
     * body bytes is known without {@code command}, which reads the body and answers null for one that is no
     * replay's. Never executes anything; fails as {@link #pay} would for an invalid token or
     * another request's fingerprint.
     */
    public Uni<IdempotencyGate.CacheLook> replayCached(String merchantId, String token, byte[] body,
            Supplier<PayCommand> command) {
        LogContext.merchant(merchantId);
        return gate.replayCached(merchantId, token, body, () -> {
            PayCommand cmd = command.get();
            if (cmd == null) {
                return null;
            }
            LogContext.request(cmd.merchantId(), cmd.requestNo());
            return cmd.fingerprint();
        });
    }

    /**
     * Pays once per token; a copy waits up to {@code waitBound} for the first execution's answer.
     * {@code cacheMissed}: {@link #replayCached} has just found nothing for it.
     */
    public Uni<Reply> pay(PayCommand cmd, Duration waitBound, boolean cacheMissed) {
        LogContext.request(cmd.merchantId(), cmd.requestNo());
        IdempotencyGate.Entrance entrance = new IdempotencyGate.Entrance(cmd.merchantId(), cmd.token(),
                cmd.fingerprint(), cmd.requestNo(), waitBound, cmd.bodyDigest());
        return gate.pass(entrance, cacheMissed, claim -> executor.execute(cmd, claim));
    }

    /** One payment attempt, as it stands; empty when the merchant has none under that number. */
    public Uni<Optional<Payment>> payment(String merchantId, String requestNo) {
        LogContext.request(merchantId, requestNo);
        return db.bounded(payments.find(merchantId, requestNo));
    }

    /** An order's payment attempts, oldest first. */
    public Uni<List<Payment>> attempts(String merchantId, String orderNo) {
        return db.bounded(payments.findByOrder(merchantId, orderNo));
    }
}
