package io.payonce.bench;

import java.util.ArrayList;
import java.util.List;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;

/**
 * What the external pass does to a service it measures, whichever service it is: make orders payable, pay a
 * fresh order (token, then pay), repeat one finished request, and check afterwards that each payment was
 * recorded and charged once. Work is named by a batch: its orders are the batch's own, so no two batches, nor
 * two targets sharing Redis, meet. Two kinds: PayOnce ({@link PayOnce}), and the seed design's port
 * ({@link Seed}).
 */
interface ServiceClient extends AutoCloseable {

    /** Concurrency of the untimed set-up calls. */
    int SETUP_CONCURRENCY = 16;
    long SETUP_LIMIT_MS = 60_000;

    /** Fails unless the set-up loop made all n of what it made. */
    static Future<Void> allDone(ClosedLoop.Run run, int n, String what) {
        return run.completed() == n && run.failed() == 0 && run.wrong() == 0 ? Future.succeededFuture()
                : Future.failedFuture("set-up made " + (run.completed() - run.wrong()) + " of " + n + " " + what
                        + (run.firstFailure() == null ? "" : ": " + run.firstFailure()));
    }

    /** Makes orders 0 to n - 1 of the batch exist and be payable; untimed set-up. */
    Future<Void> orders(String batch, int n);

    /** Issues a token and pays order {@code i} of the batch with it: true when the answer is the paid one. */
    Future<Boolean> payment(String batch, int i);

    /**
     * Pays order 0 of the batch once (its order made already), then answers the operation that sends a copy
     * of that request: true when the copy's answer is the first one, byte for byte.
     */
    Future<ClosedLoop.Operation> replayOf(String batch);

    /** After n payments of a batch: one line per check, each starting "ok" or "FAIL" (Scenarios.check). */
    Future<List<String>> checkPayments(String batch, int n);

    @Override
    void close();

    /** {@link PayApi} with one merchant a batch; charges counted at the {@link InstantChannel}. */
    final class PayOnce implements ServiceClient {

        private final Context context;
        private final PayApi api;
        private final WebClient channel;
        private final Database db;
        private final String merchantPrefix;

        /** The service on {@code port}, its database {@code db}, charging the instant channel on {@code channelPort}. */
        PayOnce(Vertx vertx, Context context, int port, int channelPort, Database db,
                String merchantPrefix, int connections) {
            this.context = context;
            this.api = PayApi.connect(vertx, List.of(port), connections, merchantPrefix);
            this.channel = WebClient.create(vertx, new WebClientOptions().setDefaultHost("127.0.0.1")
                    .setDefaultPort(channelPort).setMaxPoolSize(1));
            this.db = db;
            this.merchantPrefix = merchantPrefix;
        }

        private PayApi as(String batch) {
            return api.as(merchantPrefix + "_" + batch);
        }

        @Override
        public Future<Void> orders(String batch, int n) {
            PayApi merchant = as(batch);
            return ClosedLoop.run(context, n, SETUP_CONCURRENCY, SETUP_LIMIT_MS,
                    i -> merchant.requireOrder("o" + i).map(v -> true)).compose(run -> allDone(run, n, "orders"));
        }

        @Override
        public Future<Boolean> payment(String batch, int i) {
            PayApi merchant = as(batch);
            return merchant.issueToken().compose(token -> merchant.pay(token, PayApi.payBody("o" + i, "r" + i)))
                    .map(PayApi::paid);
        }

        @Override
        public Future<ClosedLoop.Operation> replayOf(String batch) {
            PayApi merchant = as(batch);
            Buffer body = PayApi.payBody("o0", "r0");
            return merchant.issueToken().compose(token -> merchant.pay(token, body).compose(first -> {
                if (!PayApi.paid(first)) {
                    return Future.failedFuture("the request to replay answered " + first.statusCode() + ": "
                            + first.bodyAsString());
                }
                Buffer expected = first.body();
                return Future.succeededFuture(i -> merchant.pay(token, body).map(r -> r.statusCode() == 200
                        && PayApi.replayed(r) && expected.equals(r.body())));
            }));
        }

        @Override
        public Future<List<String>> checkPayments(String batch, int n) {
            String merchant = merchantPrefix + "_" + batch;
            Future<Long> payments = db.count("SELECT COUNT(*) FROM payments WHERE merchant_id = ?", merchant);
            Future<Long> paid = db.count("SELECT COUNT(*) FROM orders WHERE merchant_id = ? AND status = 'PAID'",
                    merchant);
            Future<JsonObject> charges = channel.get("/counts").addQueryParam("merchant", merchant).send()
                    .map(HttpResponse::bodyAsJsonObject);
            return Future.all(payments, paid, charges).map(all -> {
                long rows = payments.result();
                long orders = paid.result();
                long charged = charges.result().getLong("charges", -1L);
                long repeated = charges.result().getLong("repeated", -1L);
                List<String> checks = new ArrayList<>();
                checks.add(Scenarios.check(rows == n && orders == n, "MySQL: " + rows + " payment rows, " + orders
                        + " PAID orders (expected " + n + " each)"));
                checks.add(Scenarios.check(charged == n && repeated == 0, "instant channel: " + charged
                        + " charges, " + repeated + " of a request number already charged (expected " + n + " and 0)"));
                return checks;
            });
        }

        @Override
        public void close() {
            api.close();
            channel.close();
        }
    }

    /**
     * The seed design's port (peers' {@code seed-go}): orders are rows it reads (it has no endpoint for them),
     * inserted in its database; the token goes in the pay request's body; a replay is answered from its
     * token row. Its channel is a sleep of 0 ms, so nothing is counted there: the checks are its own tables.
     */
    final class Seed implements ServiceClient {

        private static final int ROWS_PER_INSERT = 500;

        private final WebClient web;
        private final Database db;

        Seed(Vertx vertx, int port, Database db, int connections) {
            this.web = WebClient.create(vertx, new WebClientOptions().setDefaultHost("127.0.0.1").setDefaultPort(port)
                    .setMaxPoolSize(connections).setPipelining(false).setKeepAlive(true).setTcpNoDelay(true)
                    .setConnectTimeout(5_000).setUserAgentEnabled(false));
            this.db = db;
        }

        private static String orderNo(String batch, int i) {
            return batch + "-o" + i;
        }

        @Override
        public Future<Void> orders(String batch, int n) {
            Future<Void> all = Future.succeededFuture();
            for (int from = 0; from < n; from += ROWS_PER_INSERT) {
                StringBuilder sql = new StringBuilder("INSERT INTO pay_orders (order_no, amount, status, version) VALUES ");
                for (int i = from; i < Math.min(n, from + ROWS_PER_INSERT); i++) {
                    sql.append(i == from ? "" : ",").append("('").append(orderNo(batch, i)).append("', ")
                            .append(PayApi.AMOUNT).append(", 0, 0)");
                }
                all = all.compose(v -> db.execute(sql.toString()).mapEmpty());
            }
            return all;
        }

        private Future<String> token() {
            return web.post("/tokens").timeout(15_000).send().compose(r -> r.statusCode() == 200
                    ? Future.succeededFuture(r.bodyAsJsonObject().getString("token"))
                    : Future.failedFuture("POST /tokens answered " + r.statusCode() + ": " + r.bodyAsString()));
        }

        private Future<HttpResponse<Buffer>> pay(Buffer body) {
            return web.post("/pay").putHeader("Content-Type", "application/json").timeout(15_000).sendBuffer(body);
        }

        private static Buffer payBody(String token, String batch, int i) {
            return Buffer.buffer(new JsonObject().put("token", token).put("order_no", orderNo(batch, i))
                    .put("request_no", batch + "-r" + i).put("amount", PayApi.AMOUNT).encode());
        }

        private static boolean paid(HttpResponse<Buffer> r) {
            return r.statusCode() == 200 && "PAID".equals(r.bodyAsJsonObject().getString("status"));
        }

        @Override
        public Future<Boolean> payment(String batch, int i) {
            return token().compose(token -> pay(payBody(token, batch, i))).map(Seed::paid);
        }

        @Override
        public Future<ClosedLoop.Operation> replayOf(String batch) {
            return token().compose(token -> {
                Buffer body = payBody(token, batch, 0);
                return pay(body).compose(first -> {
                    if (!paid(first)) {
                        return Future.failedFuture("the request to replay answered " + first.statusCode() + ": "
                                + first.bodyAsString());
                    }
                    Buffer expected = first.body();
                    return Future.succeededFuture(i -> pay(body).map(r -> r.statusCode() == 200
                            && expected.equals(r.body())));
                });
            });
        }

        @Override
        public Future<List<String>> checkPayments(String batch, int n) {
            Future<Long> records = db.count("SELECT COUNT(*) FROM pay_records WHERE order_no LIKE ?", batch + "-o%");
            Future<Long> paid = db.count("SELECT COUNT(*) FROM pay_orders WHERE order_no LIKE ? AND status = 2",
                    batch + "-o%");
            return Future.all(records, paid).map(all -> List.of(Scenarios.check(
                    records.result() == n && paid.result() == n, "MySQL: " + records.result() + " pay_records, "
                            + paid.result() + " paid pay_orders (expected " + n + " each)")));
        }

        @Override
        public void close() {
            web.close();
        }
    }
}
