package io.payonce.bench;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;

/**
 * The service's public HTTP API as the benchmark uses it, for one merchant over one connection pool.
 * Nothing here knows the service's internals: only the contract's paths, headers and bodies.
 */
final class PayApi implements AutoCloseable {

    static final String CURRENCY = "USD";
    static final long AMOUNT = 1999;
    /** Above the longest wait a scenario provokes (a 1 s charge), below the service's 10 s bound. */
    private static final long REQUEST_TIMEOUT_MS = 15_000;

    private final WebClient web;
    private final String merchant;

    private PayApi(WebClient web, String merchant) {
        this.web = web;
        this.merchant = merchant;
    }

    /**
     * A client whose pool holds {@code connections} keep-alive connections without pipelining, so each
     * request in flight has a connection of its own, as separate clients would.
     */
    static PayApi connect(Vertx vertx, int port, int connections, String merchant) {
        WebClientOptions options = new WebClientOptions()
                .setDefaultHost("127.0.0.1")
                .setDefaultPort(port)
                .setMaxPoolSize(connections)
                .setPipelining(false)
                .setKeepAlive(true)
                .setTcpNoDelay(true)
                .setConnectTimeout(5_000)
                .setUserAgentEnabled(false);
        return new PayApi(WebClient.create(vertx, options), merchant);
    }

    /** The same pool for another merchant: the connections are shared, the tenant is not. */
    PayApi as(String otherMerchant) {
        return new PayApi(web, otherMerchant);
    }

    String merchant() {
        return merchant;
    }

    Future<HttpResponse<Buffer>> createOrder(String orderNo) {
        return request(web.post("/orders")).sendBuffer(Buffer.buffer(
                "{\"order_no\":\"" + orderNo + "\",\"amount\":" + AMOUNT + ",\"currency\":\"" + CURRENCY + "\"}"));
    }

    /** Creates the order and fails unless the service created it (201) or already had it (200). */
    Future<Void> requireOrder(String orderNo) {
        return createOrder(orderNo).compose(r -> r.statusCode() == 201 || r.statusCode() == 200
                ? Future.succeededFuture()
                : Future.failedFuture("POST /orders answered " + r.statusCode() + ": " + r.bodyAsString()));
    }

    Future<String> issueToken() {
        return request(web.post("/tokens")).send().compose(r -> {
            if (r.statusCode() != 201) {
                return Future.failedFuture("POST /tokens answered " + r.statusCode() + ": " + r.bodyAsString());
            }
            return Future.succeededFuture(r.bodyAsJsonObject().getString("token"));
        });
    }

    /** A pay request: the body is built once per call, so copies of one request are byte-identical. */
    static Buffer payBody(String orderNo, String requestNo) {
        return Buffer.buffer("{\"order_no\":\"" + orderNo + "\",\"request_no\":\"" + requestNo + "\",\"amount\":"
                + AMOUNT + ",\"currency\":\"" + CURRENCY + "\"}");
    }

    Future<HttpResponse<Buffer>> pay(String token, Buffer body) {
        return request(web.post("/pay")).putHeader("Idempotency-Key", "\"" + token + "\"").sendBuffer(body);
    }

    /** The contract's first-execution success: 200 with status PAID. */
    static boolean paid(HttpResponse<Buffer> r) {
        if (r.statusCode() != 200) {
            return false;
        }
        JsonObject body = r.bodyAsJsonObject();
        return body != null && "PAID".equals(body.getString("status"));
    }

    static boolean replayed(HttpResponse<Buffer> r) {
        return "true".equals(r.getHeader("Idempotent-Replayed"));
    }

    /** The next {@code count} charges take {@code latencyMs}; count 0 resets at once. */
    Future<Void> sandboxLatency(long latencyMs, int count) {
        return request(web.put("/sandbox/behavior")).sendBuffer(Buffer.buffer(
                "{\"mode\":\"ok\",\"latency_ms\":" + latencyMs + ",\"count\":" + count + "}"))
                .compose(r -> r.statusCode() == 200
                        ? Future.succeededFuture()
                        : Future.failedFuture("PUT /sandbox/behavior answered " + r.statusCode() + ": " + r.bodyAsString()));
    }

    /** The sandbox ledger of one order: {@code {order_no, charges, attempts}}. */
    Future<JsonObject> ledger(String orderNo) {
        return request(web.get("/sandbox/charges").addQueryParam("order_no", orderNo)).send().compose(r ->
                r.statusCode() == 200
                        ? Future.succeededFuture(r.bodyAsJsonObject())
                        : Future.failedFuture("GET /sandbox/charges answered " + r.statusCode()));
    }

    private HttpRequest<Buffer> request(HttpRequest<Buffer> request) {
        return request.putHeader("X-Merchant-Id", merchant)
                .putHeader("Content-Type", "application/json")
                .timeout(REQUEST_TIMEOUT_MS);
    }

    @Override
    public void close() {
        web.close();
    }
}
