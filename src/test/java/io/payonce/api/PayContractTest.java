package io.payonce.api;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.OTHER_MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.pay;
import static io.payonce.support.Fixtures.payBody;
import static io.payonce.support.Fixtures.payRequest;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.token;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.nullValue;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.idempotency.TokenService;
import io.payonce.order.OrderStatus;
import io.payonce.support.Fixtures;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;

/** Every row of the contract's POST /pay tables, first execution and duplicates. */
@QuarkusTest
class PayContractTest {

    @Inject
    TestDatabase db;

    @Inject
    TokenService tokens;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
    }

    @Test
    void firstExecution_paysOrder_returns200PaidBody() {
        String orderNo = pendingOrder();
        String requestNo = id("req");

        pay(token(), orderNo, requestNo)
                .then().statusCode(200)
                .contentType("application/json")
                .header("Idempotent-Replayed", nullValue())
                .body("order_no", equalTo(orderNo))
                .body("request_no", equalTo(requestNo))
                .body("amount", equalTo((int) AMOUNT))
                .body("currency", equalTo("USD"))
                .body("status", equalTo("PAID"))
                .body("channel_txn_id", notNullValue())
                .body("paid_at", notNullValue());

        assertEquals("PAID", Fixtures.orderStatus(MERCHANT, orderNo));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, orderNo));
        as(MERCHANT).get("/payments/" + requestNo).then().statusCode(200)
                .body("status", equalTo("SUCCEEDED"))
                .body("order_no", equalTo(orderNo))
                .body("amount", equalTo((int) AMOUNT))
                .body("currency", equalTo("USD"))
                .body("channel_txn_id", notNullValue())
                .body("created_at", notNullValue())
                .body("updated_at", notNullValue());
    }

    @Test
    void duplicateAfterFinish_replaysStoredAnswerByteForByte() {
        PayRequest request = payRequest();
        Response first = pay(request);

        Response again = pay(request);

        assertEquals(200, again.statusCode());
        assertEquals(first.asString(), again.asString());
        assertEquals("true", again.header("Idempotent-Replayed"));
        assertEquals(1, db.payments(MERCHANT, request.orderNo()));
        assertEquals(1, Fixtures.ledgerAttempts(MERCHANT, request.orderNo()), "nothing executed again");
    }

    @Test
    void tokenInBareHeaderOrBody_isTheSameToken() {
        PayRequest request = payRequest();
        String first = pay(request).then().statusCode(200).extract().asString();

        String bare = as(MERCHANT).header("Idempotency-Key", request.token()).body(request.body())
                .post("/pay").then().statusCode(200).header("Idempotent-Replayed", "true").extract().asString();
        Map<String, Object> withToken = request.body();
        withToken.put("token", request.token());
        String inBody = as(MERCHANT).body(withToken).post("/pay")
                .then().statusCode(200).header("Idempotent-Replayed", "true").extract().asString();

        assertEquals(first, bare);
        assertEquals(first, inBody);
    }

    @Test
    void keyOrderAndWhitespace_doNotChangeTheFingerprint() {
        String orderNo = pendingOrder();
        String token = token();
        String first = as(MERCHANT).header("Idempotency-Key", token)
                .body("{\"order_no\":\"" + orderNo + "\",\"request_no\":\"r_fp\",\"amount\":1999}")
                .post("/pay").then().statusCode(200).extract().asString();

        String reordered = as(MERCHANT).header("Idempotency-Key", token)
                .body("{\n  \"amount\" : 1999 ,\n\t\"request_no\": \"r_fp\",   \"order_no\":\"" + orderNo + "\"\n}")
                .post("/pay").then().statusCode(200).header("Idempotent-Replayed", "true").extract().asString();

        assertEquals(first, reordered);
    }

    @Test
    void unknownOrder_returns404OrderNotFound_andReplaysIt() {
        String token = token();
        String orderNo = id("missing");
        Response first = pay(token, orderNo, id("req"));
        first.then().statusCode(404).contentType("application/problem+json").body("code", equalTo("order_not_found"));

        Response again = pay(MERCHANT, token, payBody(orderNo, first.path("request_no"), AMOUNT));

        assertEquals(404, again.statusCode());
        assertEquals(first.asString(), again.asString());
        assertEquals("true", again.header("Idempotent-Replayed"));
    }

    @Test
    void amountDiffersFromOrder_returns422AmountMismatch_andReplaysIt() {
        String orderNo = pendingOrder();
        String token = token();
        Map<String, Object> body = payBody(orderNo, id("req"), AMOUNT + 1);
        Response first = pay(MERCHANT, token, body);
        first.then().statusCode(422).body("code", equalTo("amount_mismatch"));

        Response again = pay(MERCHANT, token, body);

        assertEquals(first.asString(), again.asString());
        assertEquals("true", again.header("Idempotent-Replayed"));
        assertEquals(0, db.payments(MERCHANT, orderNo));
        assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, orderNo));
    }

    @Test
    void currencyDiffersFromOrder_returns422AmountMismatch() {
        String orderNo = pendingOrder();
        Map<String, Object> body = payBody(orderNo, id("req"), AMOUNT);
        body.put("currency", "EUR");

        pay(MERCHANT, token(), body).then().statusCode(422).body("code", equalTo("amount_mismatch"));
        assertEquals(0, db.payments(MERCHANT, orderNo));
    }

    @Test
    void matchingCurrency_isAccepted() {
        String orderNo = pendingOrder();
        Map<String, Object> body = payBody(orderNo, id("req"), AMOUNT);
        body.put("currency", "USD");

        pay(MERCHANT, token(), body).then().statusCode(200).body("status", equalTo("PAID"));
    }

    @Test
    void orderAlreadyPaid_returns409OrderNotPayable_andReplaysIt() {
        String orderNo = pendingOrder();
        pay(token(), orderNo, id("req")).then().statusCode(200);
        String token = token();
        String requestNo = id("req");

        Response first = pay(token, orderNo, requestNo);
        first.then().statusCode(409).body("code", equalTo("order_not_payable"));
        Response again = pay(token, orderNo, requestNo);

        assertEquals(first.asString(), again.asString());
        assertEquals("true", again.header("Idempotent-Replayed"));
        assertEquals(1, db.payments(MERCHANT, orderNo));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, orderNo));
    }

    @Test
    void orderPayingUnderAnotherRequest_returns409OrderNotPayable() {
        String orderNo = db.orderIn(OrderStatus.PAYING);

        pay(token(), orderNo, id("req")).then().statusCode(409).body("code", equalTo("order_not_payable"));
        assertEquals(0, db.payments(MERCHANT, orderNo));
    }

    @Test
    void requestNoUsedByAnotherToken_returns409RequestNoConflict_andReplaysIt() {
        String paidOrder = pendingOrder();
        String requestNo = id("req");
        pay(token(), paidOrder, requestNo).then().statusCode(200);
        String otherOrder = pendingOrder();
        String token = token();

        Response first = pay(token, otherOrder, requestNo);
        first.then().statusCode(409).body("code", equalTo("request_no_conflict"));
        Response again = pay(token, otherOrder, requestNo);

        assertEquals(first.asString(), again.asString());
        assertEquals("true", again.header("Idempotent-Replayed"));
        assertEquals(0, db.payments(MERCHANT, otherOrder));
        assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, otherOrder));
    }

    /**
     * The longest answers a token can keep (every identifier at its 64 characters; a paid body, a
     * decline, a request number conflict) are kept whole in MySQL: replayed from there, once Redis no
     * longer holds them, byte for byte.
     */
    @Test
    void longestAnswers_areKeptWhole_andReplayedFromMySqlWhenRedisHasForgotten() {
        String paidRequestNo = longest("req");
        String paidToken = token();
        String paidOrder = longestPendingOrder();
        Response paid = pay(paidToken, paidOrder, paidRequestNo);
        paid.then().statusCode(200);
        String conflictToken = token();
        String conflictOrder = longestPendingOrder();
        Response conflict = pay(conflictToken, conflictOrder, paidRequestNo);
        conflict.then().statusCode(409).body("code", equalTo("request_no_conflict"));
        String declinedRequestNo = longest("req");
        String declinedToken = token();
        String declinedOrder = longestPendingOrder();
        Fixtures.sandbox("decline", 0, 1);
        Response declined = pay(declinedToken, declinedOrder, declinedRequestNo);
        declined.then().statusCode(402);

        db.forgetCachedAnswers();

        assertReplayed(paid, pay(paidToken, paidOrder, paidRequestNo));
        assertReplayed(conflict, pay(conflictToken, conflictOrder, paidRequestNo));
        assertReplayed(declined, pay(declinedToken, declinedOrder, declinedRequestNo));
        assertEquals(1, Fixtures.ledgerAttempts(MERCHANT, paidOrder), "nothing executed again");
    }

    /** A fresh identifier at the longest the format allows. */
    private static String longest(String prefix) {
        String id = id(prefix);
        return id + "x".repeat(Identifiers.MAX_LENGTH - id.length());
    }

    private static String longestPendingOrder() {
        return pendingOrder(MERCHANT, longest("ord"));
    }

    private static void assertReplayed(Response first, Response again) {
        assertEquals(first.statusCode(), again.statusCode());
        assertEquals(first.asString(), again.asString());
        assertEquals("true", again.header("Idempotent-Replayed"));
    }

    @Test
    void channelDeclines_returns402_paymentFailed_orderPayableAgain() {
        PayRequest request = payRequest();
        Fixtures.sandbox("decline", 0, 1);

        Response first = pay(request);
        first.then().statusCode(402).body("code", equalTo("payment_declined"));

        assertEquals(first.asString(), pay(request).asString());
        as(MERCHANT).get("/payments/" + request.requestNo()).then().body("status", equalTo("FAILED"));
        assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, request.orderNo()));
        pay(token(), request.orderNo(), id("req")).then().statusCode(200).body("status", equalTo("PAID"));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, request.orderNo()));
    }

    @Test
    void channelOutcomeUnknown_returns202Processing_tokenStaysInProgress() {
        PayRequest request = payRequest();
        Fixtures.sandbox("timeout_after_accept", 0, 1);

        pay(request)
                .then().statusCode(202)
                .body("order_no", equalTo(request.orderNo()))
                .body("request_no", equalTo(request.requestNo()))
                .body("status", equalTo("PROCESSING"));

        assertEquals("IN_PROGRESS", db.tokenState(MERCHANT, request.token()));
        as(MERCHANT).get("/payments/" + request.requestNo()).then().body("status", equalTo("PROCESSING"));
        assertEquals("PAYING", Fixtures.orderStatus(MERCHANT, request.orderNo()));
    }

    @Test
    void channelRefusesBeforeAccepting_returns503_tokenReleasedForRetry() {
        PayRequest request = payRequest();
        Fixtures.sandbox("fail_before_accept", 0, 1);

        pay(request)
                .then().statusCode(503)
                .header("Retry-After", notNullValue())
                .body("code", equalTo("temporarily_unavailable"));

        assertEquals("AVAILABLE", db.tokenState(MERCHANT, request.token()));
        assertEquals(0, db.payments(MERCHANT, request.orderNo()));
        assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, request.orderNo()));
        pay(request).then().statusCode(200).header("Idempotent-Replayed", nullValue());
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, request.orderNo()));
    }

    @Test
    void releasedToken_keepsItsFingerprintBound() {
        String orderNo = pendingOrder();
        String token = token();
        Fixtures.sandbox("fail_before_accept", 0, 1);
        pay(token, orderNo, id("req")).then().statusCode(503);

        pay(token, orderNo, id("other")).then().statusCode(422).body("code", equalTo("idempotency_key_reused"));
    }

    @Test
    void differentFingerprint_returns422KeyReused_revealsNothing() {
        PayRequest request = payRequest();
        String first = pay(request).then().statusCode(200).extract().asString();
        String txnId = Fixtures.as(MERCHANT).get("/payments/" + request.requestNo())
                .then().extract().path("channel_txn_id");

        String reused = pay(MERCHANT, request.token(), payBody(request.orderNo(), id("req"), AMOUNT))
                .then().statusCode(422).contentType("application/problem+json")
                .body("code", equalTo("idempotency_key_reused"))
                .extract().asString();

        assertFalse(reused.contains(txnId), "the stored answer is not revealed");
        assertFalse(reused.equals(first));
        assertEquals(1, db.payments(MERCHANT, request.orderNo()));
        assertEquals(1, Fixtures.ledgerAttempts(MERCHANT, request.orderNo()));
    }

    @Test
    void noToken_returns400KeyMissing() {
        as(MERCHANT).body(payBody(pendingOrder(), id("req"), AMOUNT)).post("/pay")
                .then().statusCode(400).body("code", equalTo("idempotency_key_missing"));
    }

    @Test
    void headerAndBodyTokensDiffer_returns400() {
        Map<String, Object> body = payBody(pendingOrder(), id("req"), AMOUNT);
        body.put("token", token());

        pay(MERCHANT, token(), body).then().statusCode(400).contentType("application/problem+json")
                .body("code", equalTo("conflicting_idempotency_key"));
    }

    @Test
    void unknownExpiredOrForeignToken_allAnswerTheSame400() {
        String orderNo = pendingOrder();
        Map<String, Object> body = payBody(orderNo, id("req"), AMOUNT);
        String expired = tokens.issue(MERCHANT, Instant.now().minusSeconds(1)).await().indefinitely().token();
        String foreign = token(OTHER_MERCHANT);

        String unknown = pay(MERCHANT, "tok_" + "A".repeat(52), body).then().statusCode(400).extract().asString();
        String whenExpired = pay(MERCHANT, expired, body).then().statusCode(400).extract().asString();
        String whenForeign = pay(MERCHANT, foreign, body).then().statusCode(400).extract().asString();
        String malformed = pay(MERCHANT, "not-a-token", body).then().statusCode(400).extract().asString();

        assertEquals(unknown, whenExpired);
        assertEquals(unknown, whenForeign);
        assertEquals(unknown, malformed);
        Response r = pay(MERCHANT, foreign, body);
        r.then().body("code", equalTo("invalid_idempotency_token"));
        assertEquals(0, db.payments(MERCHANT, orderNo));
        assertTrue(db.tokenUnused(OTHER_MERCHANT, foreign), "merchant A cannot consume B's token");
    }

    @Test
    void problemBodies_haveTypeTitleStatusDetailCode() {
        pay(token(), id("missing"), id("req"))
                .then().statusCode(404)
                .contentType("application/problem+json")
                .body("type", startsWith("urn:payonce:problem:"))
                .body("title", notNullValue())
                .body("status", equalTo(404))
                .body("detail", notNullValue())
                .body("code", equalTo("order_not_found"));
    }

    @Test
    void clientKey_isInvalidWhileClientKeysAreOff() {
        String orderNo = pendingOrder();
        pay(MERCHANT, "client-generated-key-0001", payBody(orderNo, id("req"), AMOUNT))
                .then().statusCode(400).body("code", equalTo("invalid_idempotency_token"));
        assertNull(db.tokenState(MERCHANT, "client-generated-key-0001"));
    }
}
