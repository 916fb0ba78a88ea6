package io.payonce.bench;

import java.util.ArrayList;
import java.util.List;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;

/**
 * The service's public HTTP API as the benchmark uses it, for one merchant, over one connection pool per
 * instance of the service. With several instances each request goes to the next instance in turn, as a
 * round-robin load balancer without affinity sends them, except where the caller names the instance:
 * the copies of one request are split across the instances by their number ({@link #payOn}). Nothing here
 * knows the service's internals: only the contract's paths, headers and bodies.
 */
final class PayApi implements AutoCloseable {

    static final String CURRENCY = "USD";
    static final long AMOUNT = 1999;
    /** Above the longest wait a scenario provokes (a 1 s charge), below the service's 10 s bound. */
    private static final long REQUEST_TIMEOUT_MS = 15_000;

    /** One client per instance, in the order of the ports given. */
    private final List<WebClient> instances;
    /** The next instance in turn; shared by every merchant's view of these pools. */
    private final int[] turn;
    private final String merchant;

    private PayApi(List<WebClient> instances, int[] turn, String merchant) {
        this.instances = instances;
        this.turn = turn;
        this.merchant = merchant;
    }

    /**
     * A client whose pool holds {@code connections} keep-alive connections without pipelining to each of the
     * instances on {@code ports}, so each request in flight has a connection of its own, as separate clients
     * would.
     */
    static PayApi connect(Vertx vertx, List<Integer> ports, int connections, String merchant) {
        List<WebClient> instances = new ArrayList<>();
        for (int port : ports) {
            instances.add(WebClient.create(vertx, new WebClientOptions()
                    .setDefaultHost("127.0.0.1")
                    .setDefaultPort(port)
                    .setMaxPoolSize(connections)
                    .setPipelining(false)
                    .setKeepAlive(true)
                    .setTcpNoDelay(true)
                    .setConnectTimeout(5_000)
                    .setUserAgentEnabled(false)));
        }
        return new PayApi(List.copyOf(instances), new int[1], merchant);
    }

    /** The same pools for another merchant: the connections are shared, the tenant is not. */
    PayApi as(String otherMerchant) {
        return new PayApi(instances, turn, otherMerchant);
    }

    String merchant() {
        return merchant;
    }

    Future<HttpResponse<Buffer>> createOrder(String orderNo) {
        return request(next().post("/orders")).sendBuffer(Buffer.buffer(
                "{\"order_no\":\"" + orderNo + "\",\"amount\":" + AMOUNT + ",\"currency\":\"" + CURRENCY + "\"}"));
    }

    /** Creates the order and fails unless the service created it (201) or already had it (200). */
    Future<Void> requireOrder(String orderNo) {
        return createOrder(orderNo).compose(r -> r.statusCode() == 201 || r.statusCode() == 200
                ? Future.succeededFuture()
                : Future.failedFuture("POST /orders answered " + r.statusCode() + ": " + r.bodyAsString()));
    }

    Future<String> issueToken() {
        return request(next().post("/tokens")).send().compose(r -> {
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
        return pay(next(), token, body);
    }

    /** Copy number {@code copy} of a request, to instance {@code copy} modulo their number. */
    Future<HttpResponse<Buffer>> payOn(int copy, String token, Buffer body) {
        return pay(instances.get(copy % instances.size()), token, body);
    }

    private Future<HttpResponse<Buffer>> pay(WebClient instance, String token, Buffer body) {
        return request(instance.post("/pay")).putHeader("Idempotency-Key", "\"" + token + "\"").sendBuffer(body);
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

    /**
     * The next {@code count} charges at each instance's sandbox take {@code latencyMs}; count 0 resets at
     * once. Each instance keeps its sandbox's behaviour in memory and charges through its own sandbox, so
     * every instance is told.
     */
    Future<Void> sandboxLatency(long latencyMs, int count) {
        Future<Void> all = Future.succeededFuture();
        for (WebClient instance : instances) {
            all = all.compose(v -> request(instance.put("/sandbox/behavior")).sendBuffer(Buffer.buffer(
                    "{\"mode\":\"ok\",\"latency_ms\":" + latencyMs + ",\"count\":" + count + "}"))
                    .compose(r -> r.statusCode() == 200
                            ? Future.<Void>succeededFuture()
                            : Future.failedFuture("PUT /sandbox/behavior answered " + r.statusCode() + ": "
                                    + r.bodyAsString())));
        }
        return all;
    }

    /** The sandbox ledger of one order: {@code {order_no, charges, attempts}}. */
    Future<JsonObject> ledger(String orderNo) {
        return request(next().get("/sandbox/charges").addQueryParam("order_no", orderNo)).send().compose(r ->
                r.statusCode() == 200
                        ? Future.succeededFuture(r.bodyAsJsonObject())
                        : Future.failedFuture("GET /sandbox/charges answered " + r.statusCode()));
    }

    private WebClient next() {
        int instance = turn[0];
        turn[0] = (instance + 1) % instances.size();
        return instances.get(instance);
    }

    private HttpRequest<Buffer> request(HttpRequest<Buffer> request) {
        return request.putHeader("X-Merchant-Id", merchant)
                .putHeader("Content-Type", "application/json")
                .timeout(REQUEST_TIMEOUT_MS);
    }

    @Override
    public void close() {
        instances.forEach(WebClient::close);
    }
}
