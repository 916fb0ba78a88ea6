package io.payonce.sandbox;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.OTHER_MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.greaterThanOrEqualTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.payonce.support.Await;
import io.payonce.support.Fixtures;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;

/**
 * The sandbox channel on its own: charge (idempotent by request number), query and close, with a ledger
 * and, per merchant, fault behaviour.
 */
@QuarkusTest
class SandboxChannelTest {

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
    }

    private static Response charge(String merchant, String orderNo, String requestNo) {
        return as(merchant).body(Map.of("merchant_id", merchant, "order_no", orderNo, "request_no", requestNo,
                "amount", 700, "currency", "EUR")).post("/sandbox/charges");
    }

    @Test
    void secondChargeWithSameRequestNo_returnsFirstTransaction_chargesNothing() {
        String orderNo = id("ord");
        String requestNo = id("req");
        String first = charge(MERCHANT, orderNo, requestNo).then().statusCode(200)
                .body("status", equalTo("SUCCEEDED")).extract().path("txn_id");

        String second = charge(MERCHANT, orderNo, requestNo).then().statusCode(200).extract().path("txn_id");

        assertEquals(first, second);
        as(MERCHANT).queryParam("order_no", orderNo).get("/sandbox/charges").then().statusCode(200)
                .body("order_no", equalTo(orderNo))
                .body("charges", equalTo(1))
                .body("attempts", equalTo(2));
    }

    /** The members a channel client reads, in their order: a charge, a fenced number, the ledger. */
    @Test
    void answers_keepTheirMembers_andTheLedgerNamesRefundsToo() throws Exception {
        String orderNo = id("ord");
        String requestNo = id("req");
        String fenced = id("req");
        List<String> charge = List.of("txn_id", "request_no", "order_no", "amount", "currency", "status");

        String charged = charge(MERCHANT, orderNo, requestNo).then().statusCode(200).extract().asString();
        close(MERCHANT, fenced).then().statusCode(200);
        String closed = query(MERCHANT, fenced).then().statusCode(200).extract().asString();
        String ledger = as(MERCHANT).queryParam("order_no", orderNo).get("/sandbox/charges").then().statusCode(200)
                .extract().asString();

        assertEquals(charge, members(charged));
        assertEquals(charge, members(closed));
        assertTrue(new ObjectMapper().readTree(closed).get("txn_id").isNull(), closed);
        assertEquals(List.of("order_no", "charges", "attempts", "refunds", "refunded_amount", "refund_attempts"),
                members(ledger));
    }

    private static List<String> members(String json) throws Exception {
        List<String> names = new ArrayList<>();
        new ObjectMapper().readTree(json).fieldNames().forEachRemaining(names::add);
        return names;
    }

    @Test
    void queryByRequestNo_findsTheCharge_orAnswers404() {
        String requestNo = id("req");
        String txn = charge(MERCHANT, id("ord"), requestNo).then().extract().path("txn_id");

        as(MERCHANT).get("/sandbox/charges/" + requestNo).then().statusCode(200)
                .body("txn_id", equalTo(txn)).body("status", equalTo("SUCCEEDED"));
        as(MERCHANT).get("/sandbox/charges/" + id("none")).then().statusCode(404)
                .body("code", equalTo("charge_not_found"));
        as(OTHER_MERCHANT).get("/sandbox/charges/" + requestNo).then().statusCode(404);
    }

    @Test
    void declineMode_recordsADeclinedCharge_notCounted() {
        String orderNo = id("ord");
        Fixtures.sandbox("decline", 0, 1);

        charge(MERCHANT, orderNo, id("req")).then().statusCode(200).body("status", equalTo("DECLINED"));

        assertEquals(0, Fixtures.ledgerCharges(MERCHANT, orderNo));
        assertEquals(1, Fixtures.ledgerAttempts(MERCHANT, orderNo));
    }

    @Test
    void failBeforeAccept_refusesWithoutRecording_thenBackToOk() {
        String orderNo = id("ord");
        String requestNo = id("req");
        Fixtures.sandbox("fail_before_accept", 0, 2);

        charge(MERCHANT, orderNo, requestNo).then().statusCode(503).body("code", equalTo("not_accepted"));
        charge(MERCHANT, orderNo, requestNo).then().statusCode(503);
        as(MERCHANT).get("/sandbox/charges/" + requestNo).then().statusCode(404);
        charge(MERCHANT, orderNo, requestNo).then().statusCode(200).body("status", equalTo("SUCCEEDED"));

        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, orderNo));
        assertEquals(3, Fixtures.ledgerAttempts(MERCHANT, orderNo));
    }

    @Test
    void latency_delaysTheAnswer() {
        Fixtures.sandbox("ok", 400, 1);

        long started = System.nanoTime();
        charge(MERCHANT, id("ord"), id("req")).then().statusCode(200);
        long elapsedMs = (System.nanoTime() - started) / 1_000_000;

        assertTrue(elapsedMs >= 400, "took " + elapsedMs + " ms");
    }

    @Test
    void timeoutAfterAccept_recordsTheChargeThenAnswersLate() {
        String requestNo = id("req");
        Fixtures.sandbox("timeout_after_accept", 0, 1);

        long started = System.nanoTime();
        charge(MERCHANT, id("ord"), requestNo).then().statusCode(200);
        long elapsedMs = (System.nanoTime() - started) / 1_000_000;

        assertTrue(elapsedMs >= 2000, "answered after the 2 s client timeout of the tests: " + elapsedMs);
        as(MERCHANT).get("/sandbox/charges/" + requestNo).then().statusCode(200);
    }

    @Test
    void behaviour_isReplacedAndCountZeroResets() {
        Fixtures.sandbox("decline", 10, 5);
        as(MERCHANT).get("/sandbox/behavior").then().body("mode", equalTo("decline")).body("count", equalTo(5));

        Fixtures.sandbox("decline", 0, 0);

        as(MERCHANT).get("/sandbox/behavior").then().body("mode", equalTo("ok")).body("count", equalTo(0));
        charge(MERCHANT, id("ord"), id("req")).then().body("status", equalTo("SUCCEEDED"));
    }

    @Test
    void unknownMode_returns400() {
        as(MERCHANT).body(Map.of("mode", "explode", "latency_ms", 0, "count", 1)).put("/sandbox/behavior")
                .then().statusCode(400).contentType("application/problem+json");
    }

    @Test
    void chargeForAnotherMerchantThanTheHeader_returns400() {
        as(MERCHANT).body(Map.of("merchant_id", OTHER_MERCHANT, "order_no", "o1", "request_no", "r1",
                "amount", 700, "currency", "EUR")).post("/sandbox/charges")
                .then().statusCode(400).body("code", equalTo("merchant_mismatch"));
        as(MERCHANT).queryParam("order_no", "o1").get("/sandbox/charges").then()
                .body("attempts", greaterThanOrEqualTo(0));
    }

    private static void behave(String merchant, String mode, long latencyMs, int count) {
        as(merchant).body(Map.of("mode", mode, "latency_ms", latencyMs, "count", count)).put("/sandbox/behavior")
                .then().statusCode(200);
    }

    private static Response query(String merchant, String requestNo) {
        return as(merchant).get("/sandbox/charges/" + requestNo);
    }

    private static Response close(String merchant, String requestNo) {
        return as(merchant).post("/sandbox/charges/" + requestNo + "/close");
    }

    @Test
    void behaviour_isPerMerchant_oneMerchantsDeclineNeverTouchesAnothersCharge() {
        behave(OTHER_MERCHANT, "decline", 0, 1);

        charge(MERCHANT, id("ord"), id("req")).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
        as(MERCHANT).get("/sandbox/behavior").then().body("mode", equalTo("ok")).body("count", equalTo(0));
        as(OTHER_MERCHANT).get("/sandbox/behavior").then().body("mode", equalTo("decline")).body("count", equalTo(1));
        charge(OTHER_MERCHANT, id("ord"), id("req")).then().statusCode(200).body("status", equalTo("DECLINED"));
    }

    /**
     * A slow charge is recorded the moment it arrives: queries see it PENDING until it takes effect, and a
     * second charge of the number meanwhile is answered "pending" and runs nothing.
     */
    @Test
    void slowCharge_isPendingUntilItTakesEffect_andASecondChargeOfItIsAnsweredPending() throws Exception {
        String orderNo = id("ord");
        String requestNo = id("req");
        CompletableFuture<Response> first = pendingCharge(orderNo, requestNo, 1_500);

        query(MERCHANT, requestNo).then().statusCode(200).body("status", equalTo("PENDING"));
        charge(MERCHANT, orderNo, requestNo).then().statusCode(202).body("status", equalTo("PENDING"));
        assertEquals(0, Fixtures.ledgerCharges(MERCHANT, orderNo), "nothing charged yet");

        first.get(10, TimeUnit.SECONDS).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
        query(MERCHANT, requestNo).then().statusCode(200).body("status", equalTo("SUCCEEDED"));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, orderNo));
        assertEquals(2, Fixtures.ledgerAttempts(MERCHANT, orderNo));
    }

    @Test
    void closeOfANumberNeverCharged_fencesItOff_aLaterChargeIsClosed() {
        String orderNo = id("ord");
        String requestNo = id("req");

        close(MERCHANT, requestNo).then().statusCode(200).body("status", equalTo("CLOSED"));

        charge(MERCHANT, orderNo, requestNo).then().statusCode(200).body("status", equalTo("CLOSED"));
        query(MERCHANT, requestNo).then().statusCode(200).body("status", equalTo("CLOSED"));
        assertEquals(0, Fixtures.ledgerCharges(MERCHANT, orderNo));
        query(OTHER_MERCHANT, requestNo).then().statusCode(404);
    }

    @Test
    void closeOfAPendingCharge_meansItNeverSucceeds() throws Exception {
        String orderNo = id("ord");
        String requestNo = id("req");
        CompletableFuture<Response> pending = pendingCharge(orderNo, requestNo, 1_000);

        close(MERCHANT, requestNo).then().statusCode(200).body("status", equalTo("CLOSED"));

        pending.get(10, TimeUnit.SECONDS).then().statusCode(200).body("status", equalTo("CLOSED"));
        // past the moment the charge would have taken effect: closed stays closed
        Thread.sleep(300);
        query(MERCHANT, requestNo).then().body("status", equalTo("CLOSED"));
        assertEquals(0, Fixtures.ledgerCharges(MERCHANT, orderNo));
    }

    @Test
    void closeOfASucceededCharge_isRefused_namingTheTransaction() {
        String requestNo = id("req");
        String txn = charge(MERCHANT, id("ord"), requestNo).then().statusCode(200).extract().path("txn_id");

        close(MERCHANT, requestNo).then().statusCode(409).contentType("application/problem+json")
                .body("code", equalTo("charge_succeeded"))
                .body("txn_id", equalTo(txn));
        query(MERCHANT, requestNo).then().body("status", equalTo("SUCCEEDED"));
    }

    /** A charge that takes effect {@code latencyMs} after it arrives, sent in the background; returns once it arrived. */
    private static CompletableFuture<Response> pendingCharge(String orderNo, String requestNo, long latencyMs) {
        behave(MERCHANT, "ok", latencyMs, 1);
        CompletableFuture<Response> charge = CompletableFuture.supplyAsync(() -> charge(MERCHANT, orderNo, requestNo));
        Await.until("a charge to arrive for " + orderNo, Duration.ofSeconds(5),
                () -> Fixtures.ledgerAttempts(MERCHANT, orderNo) >= 1);
        return charge;
    }
}
