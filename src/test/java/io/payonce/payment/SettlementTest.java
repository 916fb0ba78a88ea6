package io.payonce.payment;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.CURRENCY;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.ledgerCharges;
import static io.payonce.support.Fixtures.orderStatus;
import static io.payonce.support.Fixtures.orderVersion;
import static io.payonce.support.Fixtures.pay;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.sandboxNormal;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;

import jakarta.inject.Inject;

import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.channel.ChargeResult;
import io.payonce.idempotency.StoredResponse;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The one settlement, the owner's and reconciliation's: payment, order and token move together or not
 * at all, and a second settlement of one payment changes nothing and answers what the first stored.
 */
@QuarkusTest
class SettlementTest {

    private static final Duration BOUND = Duration.ofSeconds(20);

    @Inject
    TestDatabase db;

    @Inject
    PaymentExecutor executor;

    @Inject
    Settlement settlement;

    @Inject
    PaymentRepository payments;

    @Inject
    MeterRegistry meters;

    @Inject
    OutcomeRenderer renderer;

    @BeforeEach
    void setUp() {
        db.clean();
        sandboxNormal();
    }

    @Test
    void secondSettlementOfOnePayment_changesNothing_andAnswersWhatTheFirstStored() {
        PayRequest p = db.paymentProcessing();
        Payment processing = payment(p);

        Settlement.Settled first = settle(processing, new ChargeResult.Succeeded("txn_first"));
        Settlement.Settled second = settle(processing, new ChargeResult.Declined("txn_second"));

        Payment settled = payments.find(MERCHANT, p.requestNo()).await().atMost(BOUND).orElseThrow();
        assertAll(
                () -> assertTrue(first.byThisCall(), "the first settlement settles"),
                () -> assertEquals(200, first.response().status()),
                () -> assertFalse(second.byThisCall(), "the second finds the payment settled"),
                () -> assertEquals(first.response(), second.response(), "and answers what the first stored"),
                () -> assertEquals(PaymentStatus.SUCCEEDED, settled.status()),
                () -> assertEquals("txn_first", settled.channelTxnId()),
                () -> assertEquals("PAID", orderStatus(MERCHANT, p.orderNo())),
                () -> assertEquals(2, orderVersion(MERCHANT, p.orderNo()), "PENDING -> PAYING -> PAID, once"),
                () -> assertEquals("COMPLETED", db.tokenState(MERCHANT, p.token())));
        pay(p).then().statusCode(200)
                .header("Idempotent-Replayed", "true")
                .body("status", equalTo("PAID"))
                .body("channel_txn_id", equalTo("txn_first"));
    }

    /** This must never happen (only the channel's word settles), and if it does, an operator hears of it. */
    @Test
    void successArrivingForAPaymentSettledFailed_isCountedAsADisagreement() {
        PayRequest p = db.paymentProcessing();
        Payment processing = payment(p);
        double before = disagreements();
        settle(processing, new ChargeResult.Declined("txn_declined"));

        Settlement.Settled late = settle(processing, new ChargeResult.Succeeded("txn_late"));

        assertAll(
                () -> assertFalse(late.byThisCall()),
                () -> assertEquals(402, late.response().status(), "the stored answer stands"),
                () -> assertEquals(before + 1, disagreements()),
                () -> assertEquals(PaymentStatus.FAILED, payment(p).status()));
    }

    @Test
    void closedAtTheChannel_settlesFailed_withPaymentNotCompleted() {
        PayRequest p = db.paymentProcessing();

        Settlement.Settled closed = settle(payment(p), new ChargeResult.Closed());

        assertAll(
                () -> assertEquals(402, closed.response().status()),
                () -> assertEquals(PaymentFailure.CLOSED, payment(p).failure()),
                () -> assertEquals("PENDING", orderStatus(MERCHANT, p.orderNo())));
        pay(p).then().statusCode(402).body("code", equalTo("payment_not_completed"));
    }

    @Test
    void settlementWhoseOrderMovedUnderIt_writesNothing() {
        PayRequest p = db.paymentProcessing();
        Payment processing = payment(p);
        // a writer outside the state machine's rules: the settlement's version check must refuse
        db.execute("UPDATE orders SET status = 'PENDING', version = version + 1 WHERE order_no = ?", p.orderNo());

        Throwable refused = assertThrows(IllegalStateException.class,
                () -> settle(processing, new ChargeResult.Succeeded("txn_x")));

        Payment after = payments.find(MERCHANT, p.requestNo()).await().atMost(BOUND).orElseThrow();
        assertAll(
                () -> assertNotNull(refused, "the order left PAYING: an error, not a silent success"),
                () -> assertEquals(PaymentStatus.PROCESSING, after.status(), "the payment is not settled alone"),
                () -> assertEquals("PENDING", orderStatus(MERCHANT, p.orderNo())),
                () -> assertEquals("IN_PROGRESS", db.tokenState(MERCHANT, p.token()), "no answer stored"));
    }

    @Test
    void paidAnswerRebuiltFromTheRecord_isTheStoredAnswer() {
        PayRequest p = db.paymentProcessing();

        Settlement.Settled settled = settle(payment(p), new ChargeResult.Succeeded("txn_rebuilt"));

        // the answer a reader without the token's row (an order's payment list, a replay after a purge) derives
        StoredResponse rebuilt = renderer.render(Settlement.outcomeOf(payment(p)));
        assertEquals(settled.response(), rebuilt, "paid_at is the record's updated_at, to the millisecond");
    }

    private Settlement.Settled settle(Payment payment, ChargeResult word) {
        return settlement.settle(Settlement.Target.of(payment), Optional.empty(), word).await().atMost(BOUND);
    }

    private double disagreements() {
        return meters.counter("payonce.settlement.disagreements", "kind", "charge").count();
    }

    /** The request's payment record as the settlement reads it. */
    private Payment payment(PayRequest p) {
        return payments.find(MERCHANT, p.requestNo()).await().atMost(BOUND).orElseThrow();
    }

}
