package io.payonce.refund;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.OTHER_MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Refunds.ledger;
import static io.payonce.support.Refunds.order;
import static io.payonce.support.Refunds.paidOrder;
import static io.payonce.support.Refunds.refund;
import static io.payonce.support.Refunds.refundOf;
import static io.payonce.support.Refunds.sandboxRefunds;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.nullValue;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Fixtures;
import io.payonce.support.Refunds.RefundLedger;
import io.payonce.support.Refunds.RefundRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import io.restassured.response.Response;

/** Every answer of POST /refunds the contract lists, and what each leaves in the books. */
@QuarkusTest
class RefundContractTest {

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
        sandboxRefunds("ok", 0, 0);
    }

    @Test
    void refundOfPaidOrder_returns200Refunded_andTheOrderIsPartiallyRefunded() {
        String orderNo = paidOrder();
        RefundRequest r = refundOf(orderNo, 500);

        refund(r).then().statusCode(200)
                .contentType("application/json")
                .header("Idempotent-Replayed", nullValue())
                .body("refund_no", equalTo(r.refundNo()))
                .body("order_no", equalTo(orderNo))
                .body("amount", equalTo(500))
                .body("currency", equalTo("USD"))
                .body("status", equalTo("REFUNDED"))
                .body("channel_refund_id", notNullValue())
                .body("refunded_at", notNullValue());

        JsonPath o = order(orderNo);
        assertAll(
                () -> assertEquals("PARTIALLY_REFUNDED", o.getString("status")),
                () -> assertEquals(500, o.getLong("refunded_amount")),
                () -> assertEquals(List.of(Map.of("refund_no", r.refundNo(), "amount", 500, "status", "SUCCEEDED")),
                        o.getList("refunds")),
                () -> assertEquals(1, o.getList("payments").size(), "the refund is not a payment attempt"),
                () -> assertEquals(new RefundLedger(1, 500, 1), ledger(orderNo)));
        as(MERCHANT).get("/refunds/" + r.refundNo()).then().statusCode(200)
                .body("status", equalTo("SUCCEEDED"))
                .body("order_no", equalTo(orderNo))
                .body("amount", equalTo(500))
                .body("channel_refund_id", notNullValue());
    }

    @Test
    void partialRefundsAddUp_toRefunded_afterWhichTheOrderIsNotRefundable() {
        String orderNo = paidOrder();

        refund(refundOf(orderNo, 1000)).then().statusCode(200);
        refund(refundOf(orderNo, AMOUNT - 1000)).then().statusCode(200);
        refund(refundOf(orderNo, 1)).then().statusCode(409).body("code", equalTo("order_not_refundable"));

        JsonPath o = order(orderNo);
        assertEquals("REFUNDED", o.getString("status"));
        assertEquals(AMOUNT, o.getLong("refunded_amount"));
        assertEquals(new RefundLedger(2, AMOUNT, 2), ledger(orderNo));
    }

    @Test
    void sameKeyAndBodyAgain_isReplayedByteForByte_andRefundedOnce() {
        String orderNo = paidOrder();
        RefundRequest r = refundOf(orderNo, 700);
        Response first = refund(r);

        Response again = refund(r);

        assertEquals(200, again.statusCode());
        assertEquals("true", again.header("Idempotent-Replayed"));
        assertEquals(first.asString(), again.asString());
        assertEquals(new RefundLedger(1, 700, 1), ledger(orderNo));
        assertEquals(700, order(orderNo).getLong("refunded_amount"));
    }

    @Test
    void sameKeyForOtherParameters_is422IdempotencyKeyReused_andNothingMoves() {
        String orderNo = paidOrder();
        RefundRequest r = refundOf(orderNo, 700);
        refund(r).then().statusCode(200);

        refund(r.withAmount(800)).then().statusCode(422).body("code", equalTo("idempotency_key_reused"));

        assertEquals(700, order(orderNo).getLong("refunded_amount"));
    }

    @Test
    void unknownOrder_is404OrderNotFound_storedAndReplayed() {
        RefundRequest r = refundOf(id("ord"), 100);

        refund(r).then().statusCode(404).body("code", equalTo("order_not_found"))
                .body("refund_no", equalTo(r.refundNo()));
        refund(r).then().statusCode(404).header("Idempotent-Replayed", "true");
    }

    @Test
    void unpaidOrder_is409OrderNotRefundable_andReachesNoChannel() {
        String orderNo = Fixtures.pendingOrder();

        refund(refundOf(orderNo, 100)).then().statusCode(409).body("code", equalTo("order_not_refundable"));

        assertEquals("PENDING", order(orderNo).getString("status"));
        assertEquals(0, ledger(orderNo).attempts());
    }

    @Test
    void moreThanWasPaid_is422RefundExceedsPayment_whileWhatFitsIsRefunded() {
        String orderNo = paidOrder();
        refund(refundOf(orderNo, 1500)).then().statusCode(200);

        refund(refundOf(orderNo, AMOUNT - 1500 + 1)).then().statusCode(422)
                .body("code", equalTo("refund_exceeds_payment"));
        refund(refundOf(orderNo, AMOUNT - 1500)).then().statusCode(200);

        assertEquals("REFUNDED", order(orderNo).getString("status"));
        assertEquals(new RefundLedger(2, AMOUNT, 2), ledger(orderNo));
    }

    @Test
    void amountsWhoseSumWouldPassTheLargestInteger_are422RefundExceedsPayment_andMoveNothing() {
        String orderNo = paidOrder();
        refund(refundOf(orderNo, 1500)).then().statusCode(200);

        // the largest amount, the smallest whose sum with the 1500 refunded passes 2^63 - 1, the smallest too large
        for (long amount : new long[] { Long.MAX_VALUE, Long.MAX_VALUE - 1499, AMOUNT - 1500 + 1 }) {
            refund(refundOf(orderNo, amount)).then().statusCode(422)
                    .body("code", equalTo("refund_exceeds_payment"));
        }

        assertAll(
                () -> assertEquals(1500, order(orderNo).getLong("refunded_amount")),
                () -> assertEquals(0, db.reservedAmount(orderNo), "no reservation left behind"),
                () -> assertEquals(new RefundLedger(1, 1500, 1), ledger(orderNo), "none reached the channel"));
        refund(refundOf(orderNo, AMOUNT - 1500)).then().statusCode(200);
        assertEquals("REFUNDED", order(orderNo).getString("status"));
    }

    @Test
    void orderOfTheLargestAmount_isRefundedToTheLastUnit_andNotOneMore() {
        String orderNo = paidOrder(Long.MAX_VALUE);
        refund(refundOf(orderNo, Long.MAX_VALUE - 1)).then().statusCode(200);

        refund(refundOf(orderNo, 2)).then().statusCode(422).body("code", equalTo("refund_exceeds_payment"));
        refund(refundOf(orderNo, 1)).then().statusCode(200);

        JsonPath o = order(orderNo);
        assertAll(
                () -> assertEquals("REFUNDED", o.getString("status")),
                () -> assertEquals(Long.MAX_VALUE, o.getLong("refunded_amount")),
                () -> assertEquals(0, db.reservedAmount(orderNo)),
                () -> assertEquals(new RefundLedger(2, Long.MAX_VALUE, 2), ledger(orderNo)));
    }

    @Test
    void refundNoOfAnotherKey_is409RefundNoConflict() {
        String orderNo = paidOrder();
        RefundRequest first = refundOf(orderNo, 100);
        refund(first).then().statusCode(200);

        refund(new RefundRequest(Fixtures.token(), orderNo, first.refundNo(), 100)).then().statusCode(409)
                .body("code", equalTo("refund_no_conflict"));

        assertEquals(100, order(orderNo).getLong("refunded_amount"));
    }

    @Test
    void refundNumberEqualToARequestNumber_isANumberOfItsOwn() {
        String orderNo = paidOrder();
        String requestNo = as(MERCHANT).get("/orders/" + orderNo).then().extract().path("payments[0].request_no");

        refund(new RefundRequest(Fixtures.token(), orderNo, requestNo, 100)).then().statusCode(200);

        as(MERCHANT).get("/payments/" + requestNo).then().statusCode(200).body("amount", equalTo((int) AMOUNT));
        as(MERCHANT).get("/refunds/" + requestNo).then().statusCode(200).body("amount", equalTo(100));
    }

    @Test
    void declinedAtTheChannel_is402RefundDeclined_andItsAmountCanBeRefundedAgain() {
        String orderNo = paidOrder();
        sandboxRefunds("decline", 0, 1);
        RefundRequest declined = refundOf(orderNo, AMOUNT);

        refund(declined).then().statusCode(402).body("code", equalTo("refund_declined"));
        refund(declined).then().statusCode(402).header("Idempotent-Replayed", "true");
        as(MERCHANT).get("/refunds/" + declined.refundNo()).then().body("status", equalTo("FAILED"));
        assertEquals("PAID", order(orderNo).getString("status"));

        refund(refundOf(orderNo, AMOUNT)).then().statusCode(200);
        assertEquals("REFUNDED", order(orderNo).getString("status"));
        assertEquals(AMOUNT, ledger(orderNo).refundedAmount());
    }

    @Test
    void refusedBeforeAcceptance_is503_andTheSameRequestRetriedRefunds() {
        String orderNo = paidOrder();
        sandboxRefunds("fail_before_accept", 0, 1);
        RefundRequest r = refundOf(orderNo, AMOUNT);

        refund(r).then().statusCode(503).body("code", equalTo("temporarily_unavailable"))
                .body("detail", startsWith("nothing was refunded"))
                .header("Retry-After", notNullValue());
        as(MERCHANT).get("/refunds/" + r.refundNo()).then().statusCode(404);
        assertEquals(0, order(orderNo).getLong("refunded_amount"));

        refund(r).then().statusCode(200).header("Idempotent-Replayed", nullValue());
        assertEquals(new RefundLedger(1, AMOUNT, 2), ledger(orderNo));
    }

    @Test
    void withoutKey_is400_andAnotherMerchantsRefundIsNotFound() {
        String orderNo = paidOrder();
        as(MERCHANT).body(refundOf(orderNo, 100).body()).post("/refunds").then().statusCode(400)
                .body("code", equalTo("idempotency_key_missing"));
        RefundRequest r = refundOf(orderNo, 100);
        refund(r).then().statusCode(200);

        as(OTHER_MERCHANT).get("/refunds/" + r.refundNo()).then().statusCode(404)
                .body("code", equalTo("refund_not_found"));
        as(MERCHANT).get("/refunds/" + id("rfd")).then().statusCode(404)
                .contentType(startsWith("application/problem+json"));
    }

    @Test
    void malformedBodies_are400_withoutARowWritten() {
        String orderNo = paidOrder();
        for (Map<String, Object> body : List.<Map<String, Object>>of(
                Map.of("order_no", orderNo, "refund_no", id("rfd"), "amount", 0),
                Map.of("order_no", orderNo, "refund_no", id("rfd"), "amount", -5),
                Map.of("order_no", orderNo, "refund_no", "no spaces", "amount", 5),
                Map.of("order_no", orderNo, "amount", 5))) {
            as(MERCHANT).header("Idempotency-Key", Fixtures.token()).body(body).post("/refunds").then()
                    .statusCode(400).contentType(startsWith("application/problem+json"));
        }
        assertEquals(0, order(orderNo).getList("refunds").size());
    }
}
