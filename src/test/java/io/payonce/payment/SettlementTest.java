package io.payonce.payment;

import static io.payonce.Fixtures.AMOUNT;
import static io.payonce.Fixtures.CURRENCY;
import static io.payonce.Fixtures.MERCHANT;
import static io.payonce.Fixtures.id;
import static io.payonce.Fixtures.ledgerCharges;
import static io.payonce.Fixtures.orderStatus;
import static io.payonce.Fixtures.orderVersion;
import static io.payonce.Fixtures.pay;
import static io.payonce.Fixtures.pendingOrder;
import static io.payonce.Fixtures.sandboxNormal;
import static io.payonce.Fixtures.unsettledPayment;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.Duration;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.Fixtures.PayRequest;
import io.payonce.TestDatabase;
import io.payonce.channel.ChargeResult;
import io.quarkus.test.junit.QuarkusTest;

/**
 * The settlement statement: payment, order and token move together or not at all, and a second
 * settlement of one payment changes nothing.
 */
@QuarkusTest
class SettlementTest {

    private static final Duration BOUND = Duration.ofSeconds(20);

    @Inject
    TestDatabase db;

    @Inject
    PaymentExecutor executor;

    @Inject
    PaymentRepository payments;

    @BeforeEach
    void setUp() {
        db.clean();
        sandboxNormal();
    }

    @Test
    void secondSettlementOfOnePayment_changesNothing() {
        PayRequest p = unsettledPayment();
        Payment processing = payment(p);

        PaymentExecutor.Executed first = executor.settleReconciled(processing, new ChargeResult.Succeeded("txn_first"))
                .await().atMost(BOUND);
        PaymentExecutor.Executed second = executor.settleReconciled(processing, new ChargeResult.Declined("txn_second"))
                .await().atMost(BOUND);

        Payment settled = payments.find(MERCHANT, p.requestNo()).await().atMost(BOUND);
        assertAll(
                () -> assertNotNull(first, "the first settlement settles"),
                () -> assertInstanceOf(PayOutcome.Paid.class, first.outcome()),
                () -> assertNull(second, "the second finds the payment settled"),
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

    @Test
    void settlementWhoseOrderMovedUnderIt_writesNothing() {
        PayRequest p = unsettledPayment();
        Payment processing = payment(p);
        // a writer outside the state machine's rules: the settlement's version check must refuse
        db.execute("UPDATE orders SET status = 'PENDING', version = version + 1 WHERE order_no = ?", p.orderNo());

        PaymentExecutor.Executed executed = null;
        Throwable failure = null;
        try {
            executed = executor.settleReconciled(processing, new ChargeResult.Succeeded("txn_x")).await().atMost(BOUND);
        } catch (IllegalStateException e) {
            failure = e;
        }

        Payment after = payments.find(MERCHANT, p.requestNo()).await().atMost(BOUND);
        PaymentExecutor.Executed none = executed;
        Throwable refused = failure;
        assertAll(
                () -> assertNull(none, "nothing settled"),
                () -> assertNotNull(refused, "the order left PAYING: an error, not a silent success"),
                () -> assertEquals(PaymentStatus.PROCESSING, after.status(), "the payment is not settled alone"),
                () -> assertEquals("PENDING", orderStatus(MERCHANT, p.orderNo())),
                () -> assertEquals("IN_PROGRESS", db.tokenState(MERCHANT, p.token()), "no answer stored"));
    }

    @Test
    void paymentWithoutToken_settlesPaymentAndOrder() {
        String orderNo = pendingOrder();
        String requestNo = id("req");

        PaymentExecutor.Executed executed = executor.execute(
                new PayCommand(MERCHANT, null, orderNo, requestNo, AMOUNT, CURRENCY)).await().atMost(BOUND);

        Payment settled = payments.find(MERCHANT, requestNo).await().atMost(BOUND);
        assertAll(
                () -> assertInstanceOf(PayOutcome.Paid.class, executed.outcome()),
                () -> assertEquals(PaymentStatus.SUCCEEDED, settled.status()),
                () -> assertNull(settled.token()),
                () -> assertEquals("PAID", orderStatus(MERCHANT, orderNo)),
                () -> assertEquals(2, orderVersion(MERCHANT, orderNo)),
                () -> assertEquals(1, ledgerCharges(MERCHANT, orderNo)));
    }

    /** The request's payment record as the settlement reads it. */
    private Payment payment(PayRequest p) {
        return payments.find(MERCHANT, p.requestNo()).await().atMost(BOUND);
    }

}
