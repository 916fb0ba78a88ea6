package io.payonce.bench;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonObject;

/**
 * An external payment channel that answers every charge {@code SUCCEEDED} at once, for measuring the service's
 * own cost rather than its sandbox's: the benchmark's external pass points every application it measures here
 * ({@code PAYONCE_CHANNEL_URL}), with the sandbox off. It speaks the part of the channel API
 * ({@code channel/PaymentChannel}) a payment uses, as the peers' channel stub does: a charge succeeds, a query says
 * SUCCEEDED, a close is refused as {@code charge_succeeded}; refunds alike. Unlike the stub it counts, so the
 * driver can keep checking one charge per payment: {@code GET /counts?merchant=M} answers
 * {@code {"charges":N,"repeated":R}}, R being charges of a request number this merchant had already charged.
 *
 * <p>Run by scripts/bench.sh as a process of its own, so that its CPU is neither the driver's nor the
 * application's: {@code java ... io.payonce.bench.InstantChannel PORT [PID [SECONDS]]}. One event loop: all state
 * is its own, without locks. It stops by itself once process PID (the script that started it) is gone, or after
 * SECONDS (an hour by default), so a benchmark that dies leaves nothing listening.
 */
public final class InstantChannel {

    private static final long DEFAULT_LIFE_SECONDS = 3600;
    private static final Buffer CLOSE_REFUSED_CHARGE = Buffer.buffer(
            "{\"code\":\"charge_succeeded\",\"txn_id\":\"tx_instant_q\"}");
    private static final Buffer CLOSE_REFUSED_REFUND = Buffer.buffer(
            "{\"code\":\"refund_succeeded\",\"refund_id\":\"rf_instant_q\"}");
    private static final Buffer QUERIED_CHARGE = Buffer.buffer("{\"status\":\"SUCCEEDED\",\"txn_id\":\"tx_instant_q\"}");
    private static final Buffer QUERIED_REFUND = Buffer.buffer("{\"status\":\"SUCCEEDED\",\"refund_id\":\"rf_instant_q\"}");

    /** Request numbers charged, by merchant. */
    private final Map<String, Set<String>> charged = new HashMap<>();
    /** Charges of a number already charged, by merchant: the service charging one request twice. */
    private final Map<String, Long> repeated = new HashMap<>();
    private long sequence;

    private InstantChannel() {
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        long watchedPid = args.length > 1 ? Long.parseLong(args[1]) : -1;
        long lifeSeconds = args.length > 2 ? Long.parseLong(args[2]) : DEFAULT_LIFE_SECONDS;
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1).setWorkerPoolSize(1)
                .setInternalBlockingPoolSize(1));
        InstantChannel channel = new InstantChannel();
        vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(port).setTcpNoDelay(true))
                .requestHandler(request -> request.body().onSuccess(body -> channel.answer(request, body)))
                .listen().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        System.out.println("ready " + port);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(lifeSeconds);
        Optional<ProcessHandle> watched = watchedPid > 0 ? ProcessHandle.of(watchedPid) : Optional.empty();
        while (System.nanoTime() < deadline && watched.map(ProcessHandle::isAlive).orElse(true)) {
            Thread.sleep(1000);
        }
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private void answer(HttpServerRequest request, Buffer body) {
        String path = request.path();
        boolean post = request.method() == HttpMethod.POST;
        if (post && (path.equals("/charges") || path.equals("/refunds"))) {
            JsonObject json = body.toJsonObject();
            boolean charge = path.equals("/charges");
            String merchant = merchant(request, json);
            String number = json.getString(charge ? "request_no" : "refund_no", "");
            if (charge && !charged.computeIfAbsent(merchant, m -> new HashSet<>()).add(number)) {
                repeated.merge(merchant, 1L, Long::sum);
            }
            long id = ++sequence;
            send(request, 200, charge ? "{\"status\":\"SUCCEEDED\",\"txn_id\":\"tx_instant_" + id + "\"}"
                    : "{\"status\":\"SUCCEEDED\",\"refund_id\":\"rf_instant_" + id + "\"}");
        } else if (path.startsWith("/charges/") || path.startsWith("/refunds/")) {
            boolean charge = path.startsWith("/charges/");
            if (post && path.endsWith("/close")) {
                send(request, 409, charge ? CLOSE_REFUSED_CHARGE : CLOSE_REFUSED_REFUND);
            } else {
                send(request, 200, charge ? QUERIED_CHARGE : QUERIED_REFUND);
            }
        } else if (path.equals("/counts")) {
            String merchant = request.getParam("merchant", "");
            send(request, 200, new JsonObject()
                    .put("charges", charged.getOrDefault(merchant, Set.of()).size() + repeated.getOrDefault(merchant, 0L))
                    .put("repeated", repeated.getOrDefault(merchant, 0L)).encode());
        } else {
            send(request, 404, "{\"code\":\"not_found\"}");
        }
    }

    /** The merchant the service names in the header, else in the body. */
    private static String merchant(HttpServerRequest request, JsonObject body) {
        String header = request.getHeader("X-Merchant-Id");
        return header != null ? header : body.getString("merchant_id", "");
    }

    private static void send(HttpServerRequest request, int status, String body) {
        send(request, status, Buffer.buffer(body));
    }

    private static void send(HttpServerRequest request, int status, Buffer body) {
        request.response().setStatusCode(status).putHeader("Content-Type", "application/json").end(body);
    }
}
