package io.payonce.support;

import static io.restassured.RestAssured.given;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

import io.restassured.http.ContentType;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;

/** Starts a test from any state through the real HTTP API. */
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
        as(merchantId).body(Map.of("order_no", orderNo, "amount", AMOUNT, "currency", CURRENCY))
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

    /** A pay request ready to be sent by {@link #MERCHANT}: its PENDING order, its token and its request number. */
    public record PayRequest(String orderNo, String token, String requestNo) {

        /** Its body for {@link #AMOUNT}, without a token; a new map each time, for a test to add to. */
        public Map<String, Object> body() {
            return payBody(orderNo, requestNo, AMOUNT);
        }
    }

    /** A fresh {@link #pendingOrder()}, a fresh {@link #token()} and a fresh request number. */
    public static PayRequest payRequest() {
        String orderNo = pendingOrder();
        String token = token();
        return new PayRequest(orderNo, token, id("req"));
    }

    /**
     * A fresh request paid while the sandbox accepts the charge and its answer times out: a 202, the
     * payment left PROCESSING and the token IN_PROGRESS, the charge in the ledger.
     */
    public static PayRequest unsettledPayment() {
        PayRequest request = payRequest();
        sandbox("timeout_after_accept", 0, 1);
        pay(request).then().statusCode(202);
        return request;
    }

    public static Map<String, Object> payBody(String orderNo, String requestNo, long amount) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("order_no", orderNo);
        body.put("request_no", requestNo);
        body.put("amount", amount);
        return body;
    }

    /** A pay answer read whole on the thread that received it, so it can be compared on another. */
    public record Answer(int status, String contentType, String body, String replayed, String retryAfter,
            long elapsedMs) {

        public static Answer of(Response response, long startedNanos) {
            String body = response.asString();
            return new Answer(response.statusCode(), response.contentType(), body,
                    response.header("Idempotent-Replayed"), response.header("Retry-After"),
                    (System.nanoTime() - startedNanos) / 1_000_000);
        }

        public boolean isReplay() {
            return "true".equals(replayed);
        }
    }

    /** {@link #pay(String, String, String)}, read whole and timed. */
    public static Answer payAnswer(String token, String orderNo, String requestNo) {
        long started = System.nanoTime();
        return Answer.of(pay(token, orderNo, requestNo), started);
    }

    public static Answer payAnswer(PayRequest request) {
        return payAnswer(request.token(), request.orderNo(), request.requestNo());
    }

    /** POST /pay with the token in the Idempotency-Key header as a structured-field string. */
    public static Response pay(String merchantId, String token, Map<String, Object> body) {
        return as(merchantId).header("Idempotency-Key", "\"" + token + "\"").body(body).post("/pay");
    }

    public static Response pay(String token, String orderNo, String requestNo) {
        return pay(MERCHANT, token, payBody(orderNo, requestNo, AMOUNT));
    }

    public static Response pay(PayRequest request) {
        return pay(MERCHANT, request.token(), request.body());
    }

    /** The next {@code count} sandbox charges take {@code mode} after {@code latencyMs}. */
    public static void sandbox(String mode, long latencyMs, int count) {
        as(MERCHANT).body(Map.of("mode", mode, "latency_ms", latencyMs, "count", count))
                .put("/sandbox/behavior").then().statusCode(200);
    }

    public static void sandboxNormal() {
        sandbox("ok", 0, 0);
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
