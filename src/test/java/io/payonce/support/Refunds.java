package io.payonce.support;

import static io.payonce.support.Fixtures.as;

import java.util.Map;

import io.restassured.path.json.JsonPath;
import io.restassured.response.Response;

/** Refund calls and readings for tests that speak to the instance under test, as {@link Fixtures} does for payments. */
public final class Refunds {

    private Refunds() {
    }

    /** One refund request: its key, order, number and amount. */
    public record RefundRequest(String token, String orderNo, String refundNo, long amount) {

        public Map<String, Object> body() {
            return Map.of("order_no", orderNo, "refund_no", refundNo, "amount", amount);
        }

        /** The same order and key with another amount. */
        public RefundRequest withAmount(long otherAmount) {
            return new RefundRequest(token, orderNo, refundNo, otherAmount);
        }
    }

    /** A fresh key and refund number for {@code amount} of the order. */
    public static RefundRequest refundOf(String orderNo, long amount) {
        return new RefundRequest(Fixtures.token(), orderNo, Fixtures.id("rfd"), amount);
    }

    /** An order of {@link Fixtures#AMOUNT} paid through POST /pay; returns its order number. */
    public static String paidOrder() {
        return paidOrder(Fixtures.AMOUNT);
    }

    /** An order of {@code amount} paid through POST /pay; returns its order number. */
    public static String paidOrder(long amount) {
        String orderNo = Fixtures.pendingOrder(Fixtures.MERCHANT, Fixtures.id("ord"), amount);
        Fixtures.pay(new PayRequest(orderNo, Fixtures.id("req"), Fixtures.token(), amount)).then().statusCode(200);
        return orderNo;
    }

    public static Response refund(RefundRequest request) {
        return as(Fixtures.MERCHANT).header("Idempotency-Key", "\"" + request.token() + "\"").body(request.body())
                .post("/refunds");
    }

    public static Answer refundAnswer(RefundRequest request) {
        return Answer.of(() -> refund(request));
    }

    /** The merchant's next {@code count} refunds at the sandbox take {@code mode} after {@code latencyMs}. */
    public static void sandboxRefunds(String mode, long latencyMs, int count) {
        as(Fixtures.MERCHANT).body(Map.of("operation", "refund", "mode", mode, "latency_ms", latencyMs, "count", count))
                .put("/sandbox/behavior").then().statusCode(200);
    }

    /** The sandbox's refund ledger of the order: refunds that succeeded, their total, refund calls. */
    public record RefundLedger(int refunds, long refundedAmount, int attempts) {
    }

    public static RefundLedger ledger(String orderNo) {
        JsonPath ledger = as(Fixtures.MERCHANT).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().statusCode(200).extract().jsonPath();
        return new RefundLedger(ledger.getInt("refunds"), ledger.getLong("refunded_amount"),
                ledger.getInt("refund_attempts"));
    }

    /** The order as GET /orders answers it. */
    public static JsonPath order(String orderNo) {
        return as(Fixtures.MERCHANT).get("/orders/" + orderNo).then().statusCode(200).extract().jsonPath();
    }
}
