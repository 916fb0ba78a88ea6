package io.payonce.payment;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.channel.ChargeResult;
import io.payonce.database.Database;
import io.payonce.database.UtcTime;
import io.payonce.idempotency.StoredResponse;
import io.payonce.idempotency.TokenRepository;
import io.payonce.idempotency.TokenRow;
import io.payonce.order.Order;
import io.payonce.order.OrderRepository;
import io.payonce.order.OrderStatus;
import io.quarkus.runtime.Startup;
import io.smallrye.mutiny.Uni;
import org.jboss.logging.Logger;

/**
 * The one way a PROCESSING payment or refund is settled, by its owner and by reconciliation alike: on the
 * channel's final word only, conditioned on the record still PROCESSING (a payment's in one statement with its
 * order and the token's stored answer; a refund's in one transaction with its order's amounts), so whichever
 * of them comes second changes nothing and answers what the first stored.
 */
@Startup
@ApplicationScoped
public class Settlement {

    private static final Logger LOG = Logger.getLogger(Settlement.class);

    private final PaymentRepository payments;
    private final OrderRepository orders;
    private final TokenRepository tokens;
    private final OutcomeRenderer renderer;
    private final Database db;
    private final Map<PaymentKind, Counter> disagreements = new EnumMap<>(PaymentKind.class);

    Settlement(PaymentRepository payments, OrderRepository orders, TokenRepository tokens, OutcomeRenderer renderer,
            Database db, MeterRegistry meters) {
        this.payments = payments;
        this.orders = orders;
        this.tokens = tokens;
        this.renderer = renderer;
        this.db = db;
        for (PaymentKind kind : PaymentKind.values()) {
            disagreements.put(kind, Counter.builder("payonce.settlement.disagreements")
                    .description("an owner holding the channel's success found its charge or refund (kind) settled"
                            + " otherwise (must stay 0)")
                    .tag("kind", kind.name().toLowerCase(Locale.ROOT)).register(meters));
        }
    }

    /** The charge or refund being settled, as its owner and the reconciler both know it. */
    public record Target(PaymentKind kind, long paymentId, String merchantId, String token, String orderNo,
            String requestNo, long amount, String currency) {

        public static Target of(Payment payment) {
            return new Target(payment.kind(), payment.id(), payment.merchantId(), payment.token(), payment.orderNo(),
                    payment.requestNo(), payment.amount(), payment.currency());
        }
    }

    /** The answer the payment now has, and whether this call is the one that settled it. */
    public record Settled(StoredResponse response, boolean byThisCall) {
    }

    /**
     * Settles the payment on the channel's final word ({@link ChargeResult#isFinal()}): succeeded, it is
     * paid; declined or closed, it failed and the order is payable again. {@code order} is the order as the
     * caller read it, or empty to read it now: the statement checks its version either way. Fails with
     * {@link Database.NoAnswerException} or a database error when nothing is known to have been written,
     * and with {@link IllegalStateException} when the order left PAYING under a PROCESSING payment.
     */
    public Uni<Settled> settle(Target target, Optional<Order> order, ChargeResult word) {
        // one instant for the answer's paid_at and the record's updated_at, at the column's precision, so an
        // answer rebuilt from the record is the one stored
        Instant now = UtcTime.now().truncatedTo(ChronoUnit.MILLIS);
        if (!word.isFinal()) {
            throw new IllegalArgumentException("not the channel's final word: " + word);
        }
        boolean paid = word instanceof ChargeResult.Succeeded;
        PaymentFailure failure = switch (word) {
            case ChargeResult.Declined declined -> PaymentFailure.DECLINED;
            case ChargeResult.Closed closed -> PaymentFailure.CLOSED;
            default -> null;
        };
        String txnId = switch (word) {
            case ChargeResult.Succeeded ok -> ok.txnId();
            case ChargeResult.Declined declined -> declined.txnId();
            default -> null;
        };
        StoredResponse response = renderer.render(outcome(target.kind(), target.orderNo(), target.requestNo(),
                target.amount(), target.currency(), paid ? PaymentStatus.SUCCEEDED : PaymentStatus.FAILED, failure,
                txnId, now));
        if (target.kind() == PaymentKind.REFUND) {
            return settleRefund(target, paid, failure, txnId, response, now)
                    .flatMap(changed -> changed ? Uni.createFrom().item(new Settled(response, true))
                            : settledBefore(target, word));
        }
        Uni<Order> read = order.isPresent() ? Uni.createFrom().item(order.get())
                : db.bounded(orders.find(target.merchantId(), target.orderNo()))
                        .map(found -> found.orElseThrow(() -> new IllegalStateException(
                                "order " + target.orderNo() + " of a payment is gone")));
        return read.flatMap(current -> db.bounded(payments.settle(target.paymentId(),
                        paid ? PaymentStatus.SUCCEEDED : PaymentStatus.FAILED, failure, txnId, current,
                        paid ? OrderStatus.PAID : OrderStatus.PENDING, target.token(), response, now)))
                .flatMap(changed -> changed ? Uni.createFrom().item(new Settled(response, true))
                        : settledBefore(target, word));
    }

    /**
     * A refund's settlement, in one transaction: its record and token, then its order's amounts (the
     * reservation booked as refunded, or given back when the channel's word is that nothing was refunded).
     * False when the refund was settled before; an order whose books cannot take it fails the transaction.
     */
    private Uni<Boolean> settleRefund(Target target, boolean refunded, PaymentFailure failure, String refundId,
            StoredResponse response, Instant now) {
        return db.inTransaction(tx -> payments.settleRefund(tx, target.paymentId(),
                refunded ? PaymentStatus.SUCCEEDED : PaymentStatus.FAILED, failure, refundId, target.token(),
                response, now)
                .flatMap(changed -> !changed ? Uni.createFrom().item(false)
                        : (refunded ? orders.refundSucceeded(tx, target.merchantId(), target.orderNo(), target.amount(), now)
                                : orders.release(tx, target.merchantId(), target.orderNo(), target.amount()))
                                .map(booked -> {
                                    if (!booked) {
                                        throw new IllegalStateException("order " + target.orderNo()
                                                + " holds no reservation for refund " + target.requestNo());
                                    }
                                    return true;
                                })));
    }

    /** The statement changed nothing: the payment was settled before, or its order moved under it. */
    private Uni<Settled> settledBefore(Target target, ChargeResult word) {
        return db.bounded(payments.find(target.kind(), target.merchantId(), target.requestNo())).flatMap(found -> {
            Payment payment = found.filter(p -> p.status() != PaymentStatus.PROCESSING).orElseThrow(
                    () -> new IllegalStateException("order " + target.orderNo() + " left PAYING under its payment"));
            if (word instanceof ChargeResult.Succeeded && payment.status() != PaymentStatus.SUCCEEDED) {
                disagreements.get(target.kind()).increment();
                LOG.errorf("the channel charged %s but the payment was settled %s: the books disagree with the channel",
                        target.requestNo(), payment.status());
            }
            return storedAnswer(payment).map(response -> new Settled(response, false));
        });
    }

    /**
     * What a settled payment answers: the answer stored with its token, or, without one, the answer its
     * record implies (the same rendering the settlement stored).
     */
    public Uni<StoredResponse> storedAnswer(Payment payment) {
        StoredResponse implied = renderer.render(outcomeOf(payment));
        if (payment.token() == null) {
            return Uni.createFrom().item(implied);
        }
        return db.bounded(tokens.find(payment.merchantId(), payment.token()))
                .map(row -> row.flatMap(TokenRow::finalAnswer).orElse(implied));
    }

    /** What a request answers while its charge's or refund's outcome is unknown. */
    public static PayOutcome processing(PaymentKind kind, String orderNo, String number) {
        return outcome(kind, orderNo, number, 0, null, PaymentStatus.PROCESSING, null, null, null);
    }

    /** The outcome a settled payment or refund record stands for. */
    public static PayOutcome outcomeOf(Payment payment) {
        return outcome(payment.kind(), payment.orderNo(), payment.requestNo(), payment.amount(), payment.currency(),
                payment.status(), payment.failure(), payment.channelTxnId(), payment.updatedAt());
    }

    /**
     * The one reading of a charge's or refund's state as the request's outcome: what a settlement stores, and
     * what a record, read back, stands for. {@code at} is when it succeeded.
     */
    private static PayOutcome outcome(PaymentKind kind, String orderNo, String number, long amount, String currency,
            PaymentStatus status, PaymentFailure failure, String channelId, Instant at) {
        boolean charge = kind == PaymentKind.CHARGE;
        return switch (status) {
            case SUCCEEDED -> charge ? new PayOutcome.Paid(orderNo, number, amount, currency, channelId, at)
                    : new PayOutcome.Refunded(orderNo, number, amount, currency, channelId, at);
            case FAILED -> failure == PaymentFailure.CLOSED
                    ? (charge ? new PayOutcome.NotCompleted(orderNo, number)
                            : new PayOutcome.RefundNotCompleted(orderNo, number))
                    : (charge ? new PayOutcome.Declined(orderNo, number)
                            : new PayOutcome.RefundDeclined(orderNo, number));
            case PROCESSING -> charge ? new PayOutcome.Processing(orderNo, number)
                    : new PayOutcome.RefundProcessing(orderNo, number);
        };
    }
}
