package io.payonce.refund;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Refunds.ledger;
import static io.payonce.support.Refunds.order;
import static io.payonce.support.Refunds.paidOrder;
import static io.payonce.support.Refunds.refund;
import static io.payonce.support.Refunds.refundOf;
import static io.payonce.support.Refunds.sandboxRefunds;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.reconcile.Reconciler;
import io.payonce.support.Await;
import io.payonce.support.Fixtures;
import io.payonce.support.Refunds.RefundLedger;
import io.payonce.support.Refunds.RefundRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;

/**
 * Refunds whose outcome the owner never heard: answered 202, then settled by the same reconciliation as
 * payments, on the channel's word only, under the refund's own number.
 */
@QuarkusTest
class RefundReconciliationTest {

    private static final Duration RUN = Duration.ofSeconds(30);

    @Inject
    TestDatabase db;

    @Inject
    Reconciler reconciler;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
        sandboxRefunds("ok", 0, 0);
    }

    /** Older than min-age, its owner's lease over: as a refund a dead or finished owner left. */
    private void ageProcessingRefunds() {
        db.execute("UPDATE payments SET created_at = created_at - INTERVAL 1 MINUTE, reconcile_after = NULL,"
                + " lease_until = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE status = 'PROCESSING'");
    }

    @Test
    void refundWhoseAnswerIsLost_is202_thenSettledByReconciliation_refundedOnce() {
        String orderNo = paidOrder();
        RefundRequest r = refundOf(orderNo, 800);
        sandboxRefunds("timeout_after_accept", 0, 1);

        refund(r).then().statusCode(202).body("status", equalTo("PROCESSING")).body("refund_no", equalTo(r.refundNo()));
        refund(r).then().statusCode(202);
        as(MERCHANT).get("/refunds/" + r.refundNo()).then().body("status", equalTo("PROCESSING"));
        refund(refundOf(orderNo, AMOUNT - 800 + 1)).then().statusCode(422)
                .body("code", equalTo("refund_exceeds_payment"));

        ageProcessingRefunds();
        Reconciler.Report report = reconciler.runOnce().await().atMost(RUN);

        assertEquals(1, report.settled());
        refund(r).then().statusCode(200).header("Idempotent-Replayed", "true").body("status", equalTo("REFUNDED"));
        as(MERCHANT).get("/refunds/" + r.refundNo()).then().body("status", equalTo("SUCCEEDED"));
        assertEquals(800, order(orderNo).getLong("refunded_amount"));
        assertEquals(new RefundLedger(1, 800, 1), ledger(orderNo), "reconciliation queried, it never refunded again");
    }

    @Test
    void lostRefundDeclinedAtTheChannel_isSettledDeclined_andItsReservationReleased() {
        String orderNo = paidOrder();
        RefundRequest r = refundOf(orderNo, AMOUNT);
        sandboxRefunds("decline", 4_000, 1);

        refund(r).then().statusCode(202);
        Await.until("the refund declined at the sandbox", RUN, () -> "DECLINED".equals(
                as(MERCHANT).get("/sandbox/refunds/" + r.refundNo()).then().extract().path("status")));
        ageProcessingRefunds();
        reconciler.runOnce().await().atMost(RUN);

        refund(r).then().statusCode(402).body("code", equalTo("refund_declined"));
        assertEquals("PAID", order(orderNo).getString("status"));
        refund(refundOf(orderNo, AMOUNT)).then().statusCode(200);
        assertEquals(new RefundLedger(1, AMOUNT, 2), ledger(orderNo));
    }

    /** A refund that never reached the channel is sent again with the same refund number, once. */
    @Test
    void refundUnknownToTheChannel_isSentAgainWithTheSameNumber() {
        String orderNo = paidOrder();
        RefundRequest r = refundOf(orderNo, 300);
        sandboxRefunds("timeout_after_accept", 0, 1);
        refund(r).then().statusCode(202);
        // as if the refund had never arrived: the sandbox forgets it
        db.execute("DELETE FROM sandbox_charges WHERE request_no = ? AND kind = 'REFUND'", r.refundNo());
        ageProcessingRefunds();

        reconciler.runOnce().await().atMost(RUN);

        refund(r).then().statusCode(200).body("status", equalTo("REFUNDED"));
        assertEquals(300, order(orderNo).getLong("refunded_amount"));
        assertEquals(1, ledger(orderNo).refunds());
    }

    /**
     * A refund still unknown to the channel past give-up-after is closed there under its own number, answered
     * 402 refund_not_completed, and its amount may be refunded again.
     */
    @Test
    void refundStillUnknownPastGiveUpAfter_isClosedAtTheChannel_andItsReservationReleased() {
        String orderNo = paidOrder();
        RefundRequest r = refundOf(orderNo, AMOUNT);
        sandboxRefunds("timeout_after_accept", 0, 1);
        refund(r).then().statusCode(202);
        db.execute("DELETE FROM sandbox_charges WHERE request_no = ? AND kind = 'REFUND'", r.refundNo());
        db.execute("UPDATE payments SET created_at = created_at - INTERVAL 2 HOUR, reconcile_after = NULL,"
                + " lease_until = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE status = 'PROCESSING'");

        reconciler.runOnce().await().atMost(RUN);

        refund(r).then().statusCode(402).body("code", equalTo("refund_not_completed"));
        as(MERCHANT).get("/sandbox/refunds/" + r.refundNo()).then().body("status", equalTo("CLOSED"));
        // the forgotten call was the only one: a close is no refund call, and nothing was sent again
        assertEquals(new RefundLedger(0, 0, 0), ledger(orderNo));
        refund(refundOf(orderNo, AMOUNT)).then().statusCode(200);
        assertEquals("REFUNDED", order(orderNo).getString("status"));
        assertEquals(new RefundLedger(1, AMOUNT, 1), ledger(orderNo));
    }
}
