package io.payonce.support;

import static io.restassured.RestAssured.given;

import java.util.Map;
import java.util.UUID;

import io.restassured.http.ContentType;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;

/**
 * Starts a test through the real HTTP API: orders, tokens, pay calls, the sandbox's behaviour and ledger.
 * {@link TestDatabase} puts rows straight into a state where a test is about what comes after.
 */
public final class Fixtures {

    public static final String MERCHANT = "merchant_a";
    public static final String OTHER_MERCHANT = "merchant_b";
    public static final long AMOUNT = 1999;
    public static final String CURRENCY = "USD";

    private Fixtures() {
    }

    /** A fresh identifier, so tests never collide on order or request numbers. */
    public static String id(String prefix) {
        return prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
    }

    public static RequestSpecification as(String merchantId) {
        return given().header("X-Merchant-Id", merchantId).contentType(ContentType.JSON);
    }

    /** A PENDING order of {@link #AMOUNT} {@link #CURRENCY}; returns its order number. */
    public static String pendingOrder(String merchantId) {
        return pendingOrder(merchantId, id("ord"));
    }

    /** A PENDING order of {@link #AMOUNT} {@link #CURRENCY} under the given order number. */
    public static String pendingOrder(String merchantId, String orderNo) {
        return pendingOrder(merchantId, orderNo, AMOUNT);
    }

    /** A PENDING order of {@code amount} {@link #CURRENCY} under the given order number. */
    public static String pendingOrder(String merchantId, String orderNo, long amount) {
        as(merchantId).body(Map.of("order_no", orderNo, "amount", amount, "currency", CURRENCY))
                .post("/orders").then().statusCode(201);
        return orderNo;
    }

    public static String pendingOrder() {
        return pendingOrder(MERCHANT);
    }

    public static String token(String merchantId) {
        return given().header("X-Merchant-Id", merchantId).post("/tokens")
                .then().statusCode(201).extract().path("token");
    }

    public static String token() {
        return token(MERCHANT);
    }

    /** A fresh {@link #pendingOrder()}, a fresh {@link #token()} and a fresh request number, for {@link #AMOUNT}. */
    public static PayRequest payRequest() {
        String orderNo = pendingOrder();
        String token = token();
        return new PayRequest(orderNo, id("req"), token, AMOUNT);
    }

    /** Its body for {@code amount}, without a token; a new map each time, for a test to add to. */
    public static Map<String, Object> payBody(String orderNo, String requestNo, long amount) {
        return new PayRequest(orderNo, requestNo, null, amount).body();
    }

    /** {@link #pay(String, String, String)}, read whole and timed. */
    public static Answer payAnswer(String token, String orderNo, String requestNo) {
        return payAnswer(new PayRequest(orderNo, requestNo, token, AMOUNT));
    }

    public static Answer payAnswer(PayRequest request) {
        return Answer.of(() -> pay(request));
    }

    /**
     * {@link #payAnswer(PayRequest)} asking, with {@code Prefer: wait=N}, to wait at most
     * {@code seconds} for a first execution.
     */
    public static Answer payPreferringWait(PayRequest request, int seconds) {
        return Answer.of(() -> request.on(as(MERCHANT)).header("Prefer", "wait=" + seconds).post("/pay"));
    }

    /** POST /pay with the token in the Idempotency-Key header as a structured-field string. */
    public static Response pay(String merchantId, String token, Map<String, Object> body) {
        return as(merchantId).header("Idempotency-Key", "\"" + token + "\"").body(body).post("/pay");
    }

    public static Response pay(String token, String orderNo, String requestNo) {
        return pay(new PayRequest(orderNo, requestNo, token, AMOUNT));
    }

    public static Response pay(PayRequest request) {
        return request.on(as(MERCHANT)).post("/pay");
    }

    /** The next {@code count} sandbox charges take {@code mode} after {@code latencyMs}. */
    public static void sandbox(String mode, long latencyMs, int count) {
        as(MERCHANT).body(Map.of("mode", mode, "latency_ms", latencyMs, "count", count))
                .put("/sandbox/behavior").then().statusCode(200);
    }

    public static void sandboxNormal() {
        sandbox("ok", 0, 0);
    }

    /**
     * The request's charge sent to the sandbox as the service's channel client sends it, so the channel holds
     * it whatever became of the payment; the sandbox's behaviour decides its outcome, which is answered.
     */
    public static String chargeAtChannel(PayRequest request) {
        return as(MERCHANT).body(request.charge(MERCHANT, CURRENCY)).post("/sandbox/charges")
                .then().statusCode(200).extract().path("status");
    }

    /** Distinct successful charges the sandbox holds for the order. */
    public static int ledgerCharges(String merchantId, String orderNo) {
        return as(merchantId).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().statusCode(200).extract().path("charges");
    }

    public static int ledgerAttempts(String merchantId, String orderNo) {
        return as(merchantId).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().statusCode(200).extract().path("attempts");
    }

    public static String orderStatus(String merchantId, String orderNo) {
        return as(merchantId).get("/orders/" + orderNo).then().statusCode(200).extract().path("status");
    }

    public static int orderVersion(String merchantId, String orderNo) {
        return as(merchantId).get("/orders/" + orderNo).then().statusCode(200).extract().path("version");
    }
}
