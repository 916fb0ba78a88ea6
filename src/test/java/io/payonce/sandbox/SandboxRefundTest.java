package io.payonce.sandbox;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.OTHER_MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasKey;
import static org.hamcrest.Matchers.matchesPattern;
import static org.hamcrest.Matchers.not;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Await;
import io.payonce.support.Fixtures;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import io.restassured.response.Response;

/**
 * The sandbox channel's refunds, per merchant like its charges: refund (idempotent by refund number), query
 * and close, in a namespace apart from charges, with their own fault behaviour and their own columns in an
 * order's ledger.
 */
@QuarkusTest
class SandboxRefundTest {

    private static final long AMOUNT = 300;

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
        for (String merchant : new String[] { MERCHANT, OTHER_MERCHANT }) {
            behave(merchant, "charge", "ok", 0, 0);
            behave(merchant, "refund", "ok", 0, 0);
        }
    }

    private static Response refund(String merchant, String orderNo, String refundNo, long amount) {
        return as(merchant).body(Map.of("merchant_id", merchant, "order_no", orderNo, "refund_no", refundNo,
                "amount", amount, "currency", "EUR")).post("/sandbox/refunds");
    }

    private static Response refund(String merchant, String orderNo, String refundNo) {
        return refund(merchant, orderNo, refundNo, AMOUNT);
    }

    private static Response charge(String merchant, String orderNo, String requestNo) {
        return as(merchant).body(Map.of("merchant_id", merchant, "order_no", orderNo, "request_no", requestNo,
                "amount", 700, "currency", "EUR")).post("/sandbox/charges");
    }

    private static Response query(String merchant, String refundNo) {
        return as(merchant).get("/sandbox/refunds/" + refundNo);
    }

    private static Response close(String merchant, String refundNo) {
        return as(merchant).post("/sandbox/refunds/" + refundNo + "/close");
    }

    private static void behave(String merchant, String operation, String mode, long latencyMs, int count) {
        as(merchant).body(Map.of("operation", operation, "mode", mode, "latency_ms", latencyMs, "count", count))
                .put("/sandbox/behavior").then().statusCode(200);
    }

    private static JsonPath ledger(String merchant, String orderNo) {
        return as(merchant).queryParam("order_no", orderNo).get("/sandbox/charges").then().statusCode(200)
                .extract().jsonPath();
    }

    private static int refunds(String merchant, String orderNo) {
        return ledger(merchant, orderNo).getInt("refunds");
    }

    @Test
    void secondRefundWithSameRefundNo_returnsFirstRefund_refundsNothingMore() {
        String orderNo = id("ord");
        String refundNo = id("rfd");
        String first = refund(MERCHANT, orderNo, refundNo).then().statusCode(200)
                .body("refund_no", equalTo(refundNo))
                .body("order_no", equalTo(orderNo))
                .body("amount", equalTo((int) AMOUNT))
                .body("currency", equalTo("EUR"))
                .body("status", equalTo("SUCCEEDED"))
                .body("refund_id", matchesPattern("sbr_[0-9a-f]{32}"))
                .extract().path("refund_id");

        String second = refund(MERCHANT, orderNo, refundNo).then().statusCode(200).extract().path("refund_id");

        assertEquals(first, second);
        query(MERCHANT, refundNo).then().statusCode(200).body("refund_id", equalTo(first))
                .body("status", equalTo("SUCCEEDED"));
        JsonPath ledger = ledger(MERCHANT, orderNo);
        assertEquals(1, ledger.getInt("refunds"));
        assertEquals(AMOUNT, ledger.getLong("refunded_amount"));
        assertEquals(2, ledger.getInt("refund_attempts"));
        assertEquals(0, ledger.getInt("charges"), "a refund is no charge");
        assertEquals(0, ledger.getInt("attempts"), "nor a charge call");
    }

    @Test
    void ledger_countsDistinctSucceededRefunds_theirTotalAndEveryRefundCall_withoutCappingAtTheCharge() {
        String orderNo = id("ord");
        charge(MERCHANT, orderNo, id("req")).then().statusCode(200);
        assertEquals(0, ledger(MERCHANT, orderNo).getLong("refunded_amount"), "0 before any refund");
        behave(MERCHANT, "refund", "decline", 0, 1);
        refund(MERCHANT, orderNo, id("rfd"), 100).then().statusCode(200).body("status", equalTo("DECLINED"));

        refund(MERCHANT, orderNo, id("rfd"), 500).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
        refund(MERCHANT, orderNo, id("rfd"), 400).then().statusCode(200).body("status", equalTo("SUCCEEDED"));

        JsonPath ledger = ledger(MERCHANT, orderNo);
        assertEquals(orderNo, ledger.getString("order_no"));
        assertEquals(1, ledger.getInt("charges"));
        assertEquals(1, ledger.getInt("attempts"));
        assertEquals(2, ledger.getInt("refunds"), "the declined one is not a refund");
        assertEquals(900, ledger.getLong("refunded_amount"), "more than the 700 charged: the sandbox records it");
        assertEquals(3, ledger.getInt("refund_attempts"));
    }

    @Test
    void ledger_whoseRefundsAddUpPastTheLargestInteger_isRefused_neverATotalThatWrappedRound() {
        String orderNo = id("ord");
        refund(MERCHANT, orderNo, id("rfd"), Long.MAX_VALUE).then().statusCode(200);
        refund(MERCHANT, orderNo, id("rfd"), Long.MAX_VALUE).then().statusCode(200);

        as(MERCHANT).queryParam("order_no", orderNo).get("/sandbox/charges").then().statusCode(500)
                .body("code", equalTo("internal_error"));
    }

    @Test
    void refundNoEqualToARequestNo_isARecordApartFromTheCharge() {
        String orderNo = id("ord");
        String number = id("num");
        String txn = charge(MERCHANT, orderNo, number).then().statusCode(200).extract().path("txn_id");
        query(MERCHANT, number).then().statusCode(404).body("code", equalTo("refund_not_found"));

        String refundId = refund(MERCHANT, orderNo, number).then().statusCode(200)
                .body("status", equalTo("SUCCEEDED")).extract().path("refund_id");

        assertNotEquals(txn, refundId);
        as(MERCHANT).get("/sandbox/charges/" + number).then().statusCode(200).body("txn_id", equalTo(txn))
                .body("request_no", equalTo(number)).body("amount", equalTo(700)).body("$", not(
                        hasKey("refund_id")));
        query(MERCHANT, number).then().statusCode(200).body("refund_id", equalTo(refundId))
                .body("amount", equalTo((int) AMOUNT)).body("$", not(hasKey("txn_id")));
        JsonPath ledger = ledger(MERCHANT, orderNo);
        assertEquals(1, ledger.getInt("charges"));
        assertEquals(1, ledger.getInt("refunds"));
    }

    @Test
    void closingARefundNo_leavesTheChargeOfThatNumberFree_andTheOtherWayRound() {
        String orderNo = id("ord");
        String closedAsRefund = id("num");
        String closedAsCharge = id("num");

        close(MERCHANT, closedAsRefund).then().statusCode(200);
        as(MERCHANT).post("/sandbox/charges/" + closedAsCharge + "/close").then().statusCode(200);

        charge(MERCHANT, orderNo, closedAsRefund).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
        refund(MERCHANT, orderNo, closedAsCharge).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
        refund(MERCHANT, orderNo, closedAsRefund).then().statusCode(200).body("status", equalTo("CLOSED"));
        charge(MERCHANT, orderNo, closedAsCharge).then().statusCode(200).body("status", equalTo("CLOSED"));
    }

    @Test
    void refundDecline_viaOperationRefund_declinesTheRefund_notTheCharges() {
        String orderNo = id("ord");
        behave(MERCHANT, "refund", "decline", 0, 1);
        as(MERCHANT).queryParam("operation", "refund").get("/sandbox/behavior").then().statusCode(200)
                .body("operation", equalTo("refund")).body("mode", equalTo("decline")).body("count", equalTo(1));
        as(MERCHANT).get("/sandbox/behavior").then().body("operation", equalTo("charge"))
                .body("mode", equalTo("ok")).body("count", equalTo(0));

        charge(MERCHANT, orderNo, id("req")).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
        refund(MERCHANT, orderNo, id("rfd")).then().statusCode(200).body("status", equalTo("DECLINED"));
        refund(MERCHANT, orderNo, id("rfd")).then().statusCode(200).body("status", equalTo("SUCCEEDED"));

        assertEquals(1, refunds(MERCHANT, orderNo));
        as(MERCHANT).queryParam("operation", "refund").get("/sandbox/behavior").then().body("mode", equalTo("ok"))
                .body("count", equalTo(0));
    }

    @Test
    void chargeBehaviour_neverTouchesRefunds() {
        String orderNo = id("ord");
        Fixtures.sandbox("decline", 0, 1);

        refund(MERCHANT, orderNo, id("rfd")).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
        charge(MERCHANT, orderNo, id("req")).then().statusCode(200).body("status", equalTo("DECLINED"));
    }

    @Test
    void countZero_resetsOnlyThatOperationsBehaviour() {
        Fixtures.sandbox("decline", 0, 5);
        behave(MERCHANT, "refund", "decline", 0, 5);

        behave(MERCHANT, "refund", "decline", 0, 0);

        as(MERCHANT).queryParam("operation", "refund").get("/sandbox/behavior").then().body("mode", equalTo("ok"))
                .body("count", equalTo(0));
        as(MERCHANT).get("/sandbox/behavior").then().body("mode", equalTo("decline")).body("count", equalTo(5));
        refund(MERCHANT, id("ord"), id("rfd")).then().body("status", equalTo("SUCCEEDED"));
    }

    @Test
    void unknownOperation_returns400() {
        as(MERCHANT).body(Map.of("operation", "payout", "mode", "ok", "count", 1)).put("/sandbox/behavior")
                .then().statusCode(400).contentType("application/problem+json");
        as(MERCHANT).queryParam("operation", "payout").get("/sandbox/behavior").then().statusCode(400)
                .contentType("application/problem+json");
    }

    @Test
    void refundFailBeforeAccept_refusesWithoutRecording_thenBackToOk() {
        String orderNo = id("ord");
        String refundNo = id("rfd");
        behave(MERCHANT, "refund", "fail_before_accept", 0, 1);

        refund(MERCHANT, orderNo, refundNo).then().statusCode(503).contentType("application/problem+json")
                .body("code", equalTo("not_accepted"));
        query(MERCHANT, refundNo).then().statusCode(404).body("code", equalTo("refund_not_found"));
        refund(MERCHANT, orderNo, refundNo).then().statusCode(200).body("status", equalTo("SUCCEEDED"));

        JsonPath ledger = ledger(MERCHANT, orderNo);
        assertEquals(1, ledger.getInt("refunds"));
        assertEquals(2, ledger.getInt("refund_attempts"));
        assertEquals(0, ledger.getInt("attempts"), "no charge call");
    }

    @Test
    void refundLatency_delaysTheAnswer() {
        behave(MERCHANT, "refund", "ok", 400, 1);

        long started = System.nanoTime();
        refund(MERCHANT, id("ord"), id("rfd")).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
        long elapsedMs = (System.nanoTime() - started) / 1_000_000;

        assertTrue(elapsedMs >= 400, "took " + elapsedMs + " ms");
    }

    @Test
    void refundTimeoutAfterAccept_recordsTheRefundThenAnswersLate() {
        String refundNo = id("rfd");
        behave(MERCHANT, "refund", "timeout_after_accept", 0, 1);

        long started = System.nanoTime();
        refund(MERCHANT, id("ord"), refundNo).then().statusCode(200);
        long elapsedMs = (System.nanoTime() - started) / 1_000_000;

        assertTrue(elapsedMs >= 2000, "answered after the 2 s client timeout of the tests: " + elapsedMs);
        query(MERCHANT, refundNo).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
    }

    /**
     * A slow refund is recorded the moment it arrives: queries see it PENDING until it takes effect, and a
     * second refund of the number meanwhile is answered "pending" and runs nothing.
     */
    @Test
    void slowRefund_isPendingUntilItTakesEffect_andASecondRefundOfItIsAnsweredPending() throws Exception {
        String orderNo = id("ord");
        String refundNo = id("rfd");
        CompletableFuture<Response> first = pendingRefund(orderNo, refundNo, 1_500);

        query(MERCHANT, refundNo).then().statusCode(200).body("status", equalTo("PENDING"));
        refund(MERCHANT, orderNo, refundNo).then().statusCode(202).body("refund_no", equalTo(refundNo))
                .body("status", equalTo("PENDING"));
        assertEquals(0, refunds(MERCHANT, orderNo), "nothing refunded yet");

        first.get(10, TimeUnit.SECONDS).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
        query(MERCHANT, refundNo).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
        JsonPath ledger = ledger(MERCHANT, orderNo);
        assertEquals(1, ledger.getInt("refunds"));
        assertEquals(2, ledger.getInt("refund_attempts"));
    }

    @Test
    void closeOfAPendingRefund_meansItNeverSucceeds() throws Exception {
        String orderNo = id("ord");
        String refundNo = id("rfd");
        CompletableFuture<Response> pending = pendingRefund(orderNo, refundNo, 1_000);

        close(MERCHANT, refundNo).then().statusCode(200).body("refund_no", equalTo(refundNo))
                .body("status", equalTo("CLOSED"));

        pending.get(10, TimeUnit.SECONDS).then().statusCode(200).body("status", equalTo("CLOSED"));
        // past the moment the refund would have taken effect: closed stays closed
        Thread.sleep(300);
        query(MERCHANT, refundNo).then().body("status", equalTo("CLOSED"));
        JsonPath ledger = ledger(MERCHANT, orderNo);
        assertEquals(0, ledger.getInt("refunds"));
        assertEquals(0, ledger.getLong("refunded_amount"));
    }

    @Test
    void closeOfARefundNeverArrived_fencesItOff_aLaterRefundIsClosed() {
        String orderNo = id("ord");
        String refundNo = id("rfd");

        close(MERCHANT, refundNo).then().statusCode(200).body("refund_no", equalTo(refundNo))
                .body("status", equalTo("CLOSED"));

        refund(MERCHANT, orderNo, refundNo).then().statusCode(200).body("status", equalTo("CLOSED"))
                .body("refund_no", equalTo(refundNo));
        query(MERCHANT, refundNo).then().statusCode(200).body("status", equalTo("CLOSED"));
        assertEquals(0, refunds(MERCHANT, orderNo));
        query(OTHER_MERCHANT, refundNo).then().statusCode(404).body("code", equalTo("refund_not_found"));
    }

    @Test
    void closeOfASucceededRefund_isRefused_namingTheRefund() {
        String refundNo = id("rfd");
        String refundId = refund(MERCHANT, id("ord"), refundNo).then().statusCode(200).extract().path("refund_id");

        close(MERCHANT, refundNo).then().statusCode(409).contentType("application/problem+json")
                .body("code", equalTo("refund_succeeded"))
                .body("refund_no", equalTo(refundNo))
                .body("refund_id", equalTo(refundId));
        query(MERCHANT, refundNo).then().body("status", equalTo("SUCCEEDED"));
    }

    @Test
    void refunds_arePerMerchant_neitherSeenNorSteeredByAnother() {
        String orderNo = id("ord");
        String refundNo = id("rfd");
        behave(OTHER_MERCHANT, "refund", "decline", 0, 1);

        refund(MERCHANT, orderNo, refundNo).then().statusCode(200).body("status", equalTo("SUCCEEDED"));

        query(OTHER_MERCHANT, refundNo).then().statusCode(404).body("code", equalTo("refund_not_found"));
        JsonPath others = ledger(OTHER_MERCHANT, orderNo);
        assertEquals(0, others.getInt("refunds"));
        assertEquals(0, others.getInt("refund_attempts"));
        refund(OTHER_MERCHANT, orderNo, refundNo).then().statusCode(200).body("status", equalTo("DECLINED"));
        query(MERCHANT, refundNo).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
    }

    @Test
    void refundForAnotherMerchantThanTheHeader_returns400() {
        as(MERCHANT).body(Map.of("merchant_id", OTHER_MERCHANT, "order_no", "o1", "refund_no", "r1",
                "amount", 100, "currency", "EUR")).post("/sandbox/refunds")
                .then().statusCode(400).body("code", equalTo("merchant_mismatch"));
    }

    /** A refund that takes effect {@code latencyMs} after it arrives, sent in the background; returns once it arrived. */
    private static CompletableFuture<Response> pendingRefund(String orderNo, String refundNo, long latencyMs) {
        behave(MERCHANT, "refund", "ok", latencyMs, 1);
        CompletableFuture<Response> refund = CompletableFuture.supplyAsync(() -> refund(MERCHANT, orderNo, refundNo));
        Await.until("a refund to arrive for " + orderNo, Duration.ofSeconds(5),
                () -> ledger(MERCHANT, orderNo).getInt("refund_attempts") >= 1);
        return refund;
    }
}
