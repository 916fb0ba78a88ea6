package io.payonce.refund;

import java.time.Duration;
import java.util.Optional;

import jakarta.inject.Singleton;

import io.payonce.database.Database;
import io.payonce.idempotency.IdempotencyGate;
import io.payonce.idempotency.Reply;
import io.payonce.idempotency.TemporarilyUnavailableException;
import io.payonce.observability.LogContext;
import io.payonce.payment.Payment;
import io.payonce.payment.PaymentExecutor;
import io.payonce.payment.PaymentKind;
import io.payonce.payment.PaymentRepository;
import io.smallrye.mutiny.Uni;

/**
 * The refund use case, top to bottom, as the pay use case is: the request passes the same idempotency gate
 * (a copy replays the first execution's answer, waiting while it runs), and the owner of its token runs the
 * refund in the same executor as a charge ({@link PaymentExecutor#refund}); nothing of the gate is repeated
 * here.
 */
@Singleton
public class RefundService {

    private final IdempotencyGate gate;
    private final PaymentExecutor executor;
    private final PaymentRepository records;
    private final Database db;

    RefundService(IdempotencyGate gate, PaymentExecutor executor, PaymentRepository records, Database db) {
        this.gate = gate;
        this.executor = executor;
        this.records = records;
        this.db = db;
    }

    /**
     * Refunds once per token; a copy waits up to {@code waitBound} for the first execution's answer. A refusal
     * to retry, from the gate or the executor, says that nothing was refunded.
     */
    public Uni<Reply> refund(RefundCommand cmd, Duration waitBound) {
        LogContext.request(cmd.merchantId(), cmd.refundNo());
        IdempotencyGate.Entrance entrance = new IdempotencyGate.Entrance(cmd.merchantId(), cmd.token(),
                cmd.fingerprint(), cmd.refundNo(), waitBound, null);
        return gate.pass(entrance, false, claim -> executor.refund(cmd.merchantId(), cmd.token(), cmd.orderNo(),
                cmd.refundNo(), cmd.amount(), claim))
                .onFailure(TemporarilyUnavailableException.class)
                .transform(e -> ((TemporarilyUnavailableException) e).ofRefund());
    }

    /** One refund, as it stands; empty when the merchant has none under that number. */
    public Uni<Optional<Payment>> refund(String merchantId, String refundNo) {
        LogContext.request(merchantId, refundNo);
        return db.bounded(records.find(PaymentKind.REFUND, merchantId, refundNo));
    }
}
