package io.payonce.support;

import java.util.LinkedHashMap;
import java.util.Map;

import io.restassured.specification.RequestSpecification;

/**
 * One payment a client means to make, as every test sends it: its order, its own request number, its own
 * token (null for a caller without one) and the amount it pays.
 */
public record PayRequest(String orderNo, String requestNo, String token, long amount) {

    /** Its body, without a token and without a currency; a new map each time, for a test to add to. */
    public Map<String, Object> body() {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("order_no", orderNo);
        body.put("request_no", requestNo);
        body.put("amount", amount);
        return body;
    }

    /** {@link #body()} as JSON text, as a producer on the queue sends it (identifiers need no escaping). */
    public String json() {
        return "{\"order_no\":\"" + orderNo + "\",\"request_no\":\"" + requestNo + "\",\"amount\":" + amount + "}";
    }

    /** The charge the service's channel client sends for this request: same merchant, numbers and amount. */
    public Map<String, Object> charge(String merchantId, String currency) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("merchant_id", merchantId);
        body.put("order_no", orderNo);
        body.put("request_no", requestNo);
        body.put("amount", amount);
        body.put("currency", currency);
        return body;
    }

    /** The same order paid again as a client does after a failure: a fresh request number and a fresh token. */
    public PayRequest again(String newRequestNo, String newToken) {
        return new PayRequest(orderNo, newRequestNo, newToken, amount);
    }

    /** {@code spec} carrying this request: its token as an Idempotency-Key structured-field string, and its body. */
    public RequestSpecification on(RequestSpecification spec) {
        return spec.header("Idempotency-Key", "\"" + token + "\"").body(body());
    }
}
