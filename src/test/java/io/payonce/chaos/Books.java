package io.payonce.chaos;

import java.io.IOException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.AMQP;

import io.payonce.chaos.History.Refund;
import io.payonce.chaos.History.Request;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.ChannelCharge;
import io.payonce.support.PayClient.Ledger;
import io.payonce.support.QueueClient;
import io.restassured.response.Response;

/**
 * The books once the run has settled: the service's tables read directly (orders, payments and refunds, tokens),
 * the channel's word from S's sandbox API (the ledger of every order, the query of every request number and
 * every refund number), as reconciliation would ask it, and the commands in {@code payonce.dead}. Keys are
 * {@code merchant/order_no}, {@code merchant/request_no}, {@code merchant/refund_no} and {@code merchant/token}.
 */
final class Books {

    /** An order; {@code reservedAmount}: what refunds in flight hold of it. */
    record OrderRow(String merchant, String orderNo, String status, int version, long amount, long refundedAmount,
            long reservedAmount) {

        /** An order without refunds' columns, as the checks of payments alone need it. */
        OrderRow(String merchant, String orderNo, String status, int version) {
            this(merchant, orderNo, status, version, PayClient.AMOUNT, 0, 0);
        }
    }

    /** A payment record; {@code createdAtEpochMs}: when its opening inserted it, on the database server's clock. */
    record PaymentRow(String merchant, String requestNo, String orderNo, String token, String status, String failure,
            String txnId, long createdAtEpochMs) {
    }

    /**
     * A refund record (a payments row of kind REFUND): {@code refundId} is the channel's refund id;
     * {@code createdAtEpochMs} as a payment record's.
     */
    record RefundRow(String merchant, String refundNo, String orderNo, String token, long amount, String status,
            String failure, String refundId, long createdAtEpochMs) {
    }

    /**
     * The channel's refunds of an order: how many succeeded and their total, and the refund calls it had; -1 each
     * when the sandbox's ledger does not tell refunds.
     */
    record RefundLedger(long refunds, long refundedAmount, long attempts) {
    }

    /** The channel's word on one refund number: its state (SUCCEEDED, DECLINED, PENDING, CLOSED) or problem code. */
    record ChannelRefund(int httpStatus, String status, String code, String refundId) {
    }

    /** A token; {@code updatedAtEpochMs}: its last change (a claim, a release, a stored answer). */
    record TokenRow(String merchant, String token, String state, Integer responseStatus, String responseBody,
            long updatedAtEpochMs) {
    }

    /**
     * A command found in {@code payonce.dead}: its merchant (the {@code user_id} the broker checked), its key, its
     * correlation id, and when it was dead-lettered ({@code x-death}'s time: whole seconds; 0 when it has none).
     */
    record DeadLetter(String merchant, String key, String correlationId, long deadAtEpochMs) {

        static DeadLetter of(AMQP.BasicProperties properties) {
            Map<String, Object> headers = properties.getHeaders() == null ? Map.of() : properties.getHeaders();
            long deadAt = 0;
            if (headers.get("x-death") instanceof List<?> deaths && !deaths.isEmpty()
                    && deaths.get(0) instanceof Map<?, ?> death && death.get("time") instanceof java.util.Date time) {
                deadAt = time.getTime();
            }
            Object key = headers.get(QueueClient.IDEMPOTENCY_KEY);
            return new DeadLetter(properties.getUserId(), key == null ? null : key.toString(),
                    properties.getCorrelationId(), deadAt);
        }
    }

    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(5);
    private static final ObjectMapper JSON = new ObjectMapper();

    final Map<String, OrderRow> orders = new ConcurrentHashMap<>();
    final Map<String, List<PaymentRow>> paymentsByRequest = new ConcurrentHashMap<>();
    final Map<String, List<PaymentRow>> paymentsByOrder = new ConcurrentHashMap<>();
    final Map<String, TokenRow> tokens = new ConcurrentHashMap<>();
    final Map<String, Ledger> ledgers = new ConcurrentHashMap<>();
    final Map<String, ChannelCharge> channel = new ConcurrentHashMap<>();
    final Map<String, List<RefundRow>> refundsByNumber = new ConcurrentHashMap<>();
    final Map<String, List<RefundRow>> refundsByOrder = new ConcurrentHashMap<>();
    final Map<String, RefundLedger> refundLedgers = new ConcurrentHashMap<>();
    final Map<String, ChannelRefund> channelRefunds = new ConcurrentHashMap<>();
    final List<DeadLetter> deadLetters = new ArrayList<>();
    final List<String> errors = new ArrayList<>();

    static String key(String merchant, String number) {
        return merchant + "/" + number;
    }

    /**
     * What is still unsettled: PROCESSING payments, PAYING orders, IN_PROGRESS tokens, charges not yet in effect,
     * queue answers owed (a row of the outbox, sent or waiting for its payment to settle), commands waiting in the
     * pay queue.
     */
    static String unsettled(Deployment deployment) throws SQLException, IOException {
        long commands = deployment.commandsWaiting();
        try (Connection c = deployment.database(); Statement s = c.createStatement()) {
            s.setQueryTimeout(5);
            try (ResultSet r = s.executeQuery("""
                    SELECT (SELECT COUNT(*) FROM payments WHERE status = 'PROCESSING'),
                           (SELECT COUNT(*) FROM orders WHERE status = 'PAYING'),
                           (SELECT COUNT(*) FROM idempotency_tokens WHERE state = 'IN_PROGRESS'),
                           (SELECT COUNT(*) FROM sandbox_charges WHERE status <> 'CLOSED' AND effective_at > UTC_TIMESTAMP(3)),
                           (SELECT COUNT(*) FROM queue_outbox)""")) {
                r.next();
                if (r.getLong(1) + r.getLong(2) + r.getLong(3) + r.getLong(4) + r.getLong(5) + commands == 0) {
                    return null;
                }
                return r.getLong(1) + " payment(s) PROCESSING, " + r.getLong(2) + " order(s) PAYING, " + r.getLong(3)
                        + " token(s) IN_PROGRESS, " + r.getLong(4) + " charge(s) pending at the channel, "
                        + r.getLong(5) + " queue answer(s) owed, " + commands + " command(s) in the pay queue";
            }
        }
    }

    static Books read(Deployment deployment, List<Request> requests, List<Refund> refunds)
            throws SQLException, InterruptedException {
        Books books = new Books();
        books.readTables(deployment);
        try {
            books.deadLetters.addAll(deployment.deadLetters());
        } catch (IOException | RuntimeException e) {
            books.error("reading " + Deployment.DEAD + ": " + e);
        }
        Set<String> orderKeys = new TreeSet<>(books.orders.keySet());
        Set<String> requestKeys = new TreeSet<>(books.paymentsByRequest.keySet());
        Set<String> refundKeys = new TreeSet<>(books.refundsByNumber.keySet());
        for (Request request : requests) {
            orderKeys.add(key(request.merchant, request.intent.orderNo()));
            requestKeys.add(key(request.merchant, request.intent.requestNo()));
        }
        for (Refund refund : refunds) {
            refundKeys.add(key(refund.merchant, refund.refundNo));
        }
        long started = System.nanoTime();
        ExecutorService readers = Executors.newFixedThreadPool(4);
        try {
            for (String order : orderKeys) {
                readers.submit(() -> books.readLedger(deployment, order));
            }
            for (String request : requestKeys) {
                readers.submit(() -> books.readCharge(deployment, request));
            }
            for (String refund : refundKeys) {
                readers.submit(() -> books.readRefund(deployment, refund));
            }
            readers.shutdown();
            if (!readers.awaitTermination(10, TimeUnit.MINUTES)) {
                books.error("reading the channel took over 10 minutes");
            }
        } finally {
            readers.shutdownNow();
        }
        ChaosRun.log(String.format("read the channel's word on %d orders, %d request numbers and %d refund numbers"
                + " in %.1f s", orderKeys.size(), requestKeys.size(), refundKeys.size(), (System.nanoTime() - started) / 1e9));
        return books;
    }

    private void readTables(Deployment deployment) throws SQLException {
        try (Connection c = deployment.database(); Statement s = c.createStatement()) {
            try (ResultSet r = s.executeQuery("""
                    SELECT merchant_id, order_no, status, version, amount, refunded_amount, reserved_amount
                    FROM orders""")) {
                while (r.next()) {
                    OrderRow row = new OrderRow(r.getString(1), r.getString(2), r.getString(3), r.getInt(4),
                            r.getLong(5), r.getLong(6), r.getLong(7));
                    orders.put(key(row.merchant(), row.orderNo()), row);
                }
            }
            try (ResultSet r = s.executeQuery("""
                    SELECT merchant_id, request_no, order_no, token, amount, status, failure, channel_txn_id,
                           TIMESTAMPDIFF(MICROSECOND, '1970-01-01', created_at) DIV 1000
                    FROM payments WHERE kind = 'REFUND' ORDER BY id""")) {
                while (r.next()) {
                    RefundRow row = new RefundRow(r.getString(1), r.getString(2), r.getString(3), r.getString(4),
                            r.getLong(5), r.getString(6), r.getString(7), r.getString(8), r.getLong(9));
                    refundsByNumber.computeIfAbsent(key(row.merchant(), row.refundNo()), k -> new ArrayList<>()).add(row);
                    refundsByOrder.computeIfAbsent(key(row.merchant(), row.orderNo()), k -> new ArrayList<>()).add(row);
                }
            }
            try (ResultSet r = s.executeQuery("""
                    SELECT merchant_id, request_no, order_no, token, status, failure, channel_txn_id,
                           TIMESTAMPDIFF(MICROSECOND, '1970-01-01', created_at) DIV 1000
                    FROM payments WHERE kind = 'CHARGE' ORDER BY id""")) {
                while (r.next()) {
                    // created_at holds UTC_TIMESTAMP(3): its distance from the epoch is the epoch milliseconds
                    PaymentRow row = new PaymentRow(r.getString(1), r.getString(2), r.getString(3), r.getString(4),
                            r.getString(5), r.getString(6), r.getString(7), r.getLong(8));
                    paymentsByRequest.computeIfAbsent(key(row.merchant(), row.requestNo()), k -> new ArrayList<>()).add(row);
                    paymentsByOrder.computeIfAbsent(key(row.merchant(), row.orderNo()), k -> new ArrayList<>()).add(row);
                }
            }
            try (ResultSet r = s.executeQuery("""
                    SELECT merchant_id, token, state, response_status, response_body,
                           TIMESTAMPDIFF(MICROSECOND, '1970-01-01', updated_at) DIV 1000
                    FROM idempotency_tokens""")) {
                while (r.next()) {
                    int status = r.getInt(4);
                    TokenRow row = new TokenRow(r.getString(1), r.getString(2), r.getString(3),
                            r.wasNull() ? null : status, r.getString(5), r.getLong(6));
                    tokens.put(key(row.merchant(), row.token()), row);
                }
            }
        }
    }

    /** The order's ledger, its charges and its refunds, in one reading. */
    private void readLedger(Deployment deployment, String orderKey) {
        String[] parts = orderKey.split("/", 2);
        try {
            Response r = deployment.channel(parts[0]).call(CALL_TIMEOUT).queryParam("order_no", parts[1])
                    .get("/sandbox/charges");
            if (r.statusCode() != 200) {
                error("the ledger of " + orderKey + ": " + r.statusCode() + " " + r.asString());
                return;
            }
            JsonNode ledger = JSON.readTree(r.asString());
            ledgers.put(orderKey, new Ledger(ledger.path("charges").asLong(), ledger.path("attempts").asLong()));
            refundLedgers.put(orderKey, new RefundLedger(ledger.path("refunds").asLong(-1),
                    ledger.path("refunded_amount").asLong(-1), ledger.path("refund_attempts").asLong(-1)));
        } catch (RuntimeException | IOException e) {
            error("the ledger of " + orderKey + ": " + e);
        }
    }

    private void readRefund(Deployment deployment, String refundKey) {
        String[] parts = refundKey.split("/", 2);
        try {
            Response r = deployment.channel(parts[0]).call(CALL_TIMEOUT).get("/sandbox/refunds/" + parts[1]);
            String body = r.asString();
            JsonNode word = body != null && body.startsWith("{") ? JSON.readTree(body) : JSON.createObjectNode();
            if (r.statusCode() != 200 && r.statusCode() != 404) {
                error("the channel's word on refund " + refundKey + ": " + r.statusCode() + " " + body);
                return;
            }
            channelRefunds.put(refundKey, new ChannelRefund(r.statusCode(), word.path("status").textValue(),
                    word.path("code").textValue(), word.path("refund_id").textValue()));
        } catch (RuntimeException | IOException e) {
            error("the channel's word on refund " + refundKey + ": " + e);
        }
    }

    private void readCharge(Deployment deployment, String requestKey) {
        String[] parts = requestKey.split("/", 2);
        try {
            PayClient sandbox = deployment.channel(parts[0]);
            channel.put(requestKey, sandbox.queryCharge(parts[1]));
        } catch (RuntimeException | AssertionError e) {
            error("the channel's word on " + requestKey + ": " + e);
        }
    }

    private synchronized void error(String message) {
        errors.add(message);
    }

    List<RefundRow> refundsOfOrder(String orderKey) {
        return refundsByOrder.getOrDefault(orderKey, List.of());
    }

    /** The channel's state of the refund number (SUCCEEDED, DECLINED, PENDING, CLOSED), or its problem code. */
    String channelSaysOfRefund(String refundKey) {
        ChannelRefund word = channelRefunds.get(refundKey);
        if (word == null) {
            return "unread";
        }
        return word.status() != null ? word.status() : word.code();
    }

    List<PaymentRow> paymentsOfOrder(String orderKey) {
        return paymentsByOrder.getOrDefault(orderKey, List.of());
    }

    /** The channel's state of the request number (SUCCEEDED, DECLINED, PENDING, CLOSED), or its problem code. */
    String channelSays(String requestKey) {
        ChannelCharge word = channel.get(requestKey);
        if (word == null) {
            return "unread";
        }
        return word.status() != null ? word.status() : word.code();
    }
}
