package io.payonce.chaos;

import java.io.IOException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import io.payonce.chaos.History.Request;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.ChannelCharge;
import io.payonce.support.PayClient.Ledger;

/**
 * The books once the run has settled: the service's tables read directly (orders, payments, tokens), and the
 * channel's word from S's sandbox API (the ledger of every order, the query of every request number), as
 * reconciliation would ask it. Keys are {@code merchant/order_no}, {@code merchant/request_no} and
 * {@code merchant/token}.
 */
final class Books {

    record OrderRow(String merchant, String orderNo, String status, int version) {
    }

    /** A payment record; {@code createdAtEpochMs}: when its opening inserted it, on the database server's clock. */
    record PaymentRow(String merchant, String requestNo, String orderNo, String token, String status, String failure,
            String txnId, long createdAtEpochMs) {
    }

    record TokenRow(String merchant, String token, String state, Integer responseStatus, String responseBody) {
    }

    final Map<String, OrderRow> orders = new ConcurrentHashMap<>();
    final Map<String, List<PaymentRow>> paymentsByRequest = new ConcurrentHashMap<>();
    final Map<String, List<PaymentRow>> paymentsByOrder = new ConcurrentHashMap<>();
    final Map<String, TokenRow> tokens = new ConcurrentHashMap<>();
    final Map<String, Ledger> ledgers = new ConcurrentHashMap<>();
    final Map<String, ChannelCharge> channel = new ConcurrentHashMap<>();
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

    static Books read(Deployment deployment, List<Request> requests) throws SQLException, InterruptedException {
        Books books = new Books();
        books.readTables(deployment);
        Set<String> orderKeys = new TreeSet<>(books.orders.keySet());
        Set<String> requestKeys = new TreeSet<>(books.paymentsByRequest.keySet());
        for (Request request : requests) {
            orderKeys.add(key(request.merchant, request.intent.orderNo()));
            requestKeys.add(key(request.merchant, request.intent.requestNo()));
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
            readers.shutdown();
            if (!readers.awaitTermination(10, TimeUnit.MINUTES)) {
                books.error("reading the channel took over 10 minutes");
            }
        } finally {
            readers.shutdownNow();
        }
        ChaosRun.log(String.format("read the channel's word on %d orders and %d request numbers in %.1f s",
                orderKeys.size(), requestKeys.size(), (System.nanoTime() - started) / 1e9));
        return books;
    }

    private void readTables(Deployment deployment) throws SQLException {
        try (Connection c = deployment.database(); Statement s = c.createStatement()) {
            try (ResultSet r = s.executeQuery("SELECT merchant_id, order_no, status, version FROM orders")) {
                while (r.next()) {
                    OrderRow row = new OrderRow(r.getString(1), r.getString(2), r.getString(3), r.getInt(4));
                    orders.put(key(row.merchant(), row.orderNo()), row);
                }
            }
            try (ResultSet r = s.executeQuery("""
                    SELECT merchant_id, request_no, order_no, token, status, failure, channel_txn_id,
                           TIMESTAMPDIFF(MICROSECOND, '1970-01-01', created_at) DIV 1000
                    FROM payments ORDER BY id""")) {
                while (r.next()) {
                    // created_at holds UTC_TIMESTAMP(3): its distance from the epoch is the epoch milliseconds
                    PaymentRow row = new PaymentRow(r.getString(1), r.getString(2), r.getString(3), r.getString(4),
                            r.getString(5), r.getString(6), r.getString(7), r.getLong(8));
                    paymentsByRequest.computeIfAbsent(key(row.merchant(), row.requestNo()), k -> new ArrayList<>()).add(row);
                    paymentsByOrder.computeIfAbsent(key(row.merchant(), row.orderNo()), k -> new ArrayList<>()).add(row);
                }
            }
            try (ResultSet r = s.executeQuery("""
                    SELECT merchant_id, token, state, response_status, response_body FROM idempotency_tokens""")) {
                while (r.next()) {
                    int status = r.getInt(4);
                    TokenRow row = new TokenRow(r.getString(1), r.getString(2), r.getString(3),
                            r.wasNull() ? null : status, r.getString(5));
                    tokens.put(key(row.merchant(), row.token()), row);
                }
            }
        }
    }

    private void readLedger(Deployment deployment, String orderKey) {
        String[] parts = orderKey.split("/", 2);
        try {
            ledgers.put(orderKey, deployment.channel(parts[0]).ledger(parts[1]));
        } catch (RuntimeException | AssertionError e) {
            error("the ledger of " + orderKey + ": " + e);
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
