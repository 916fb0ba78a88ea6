package io.payonce.support;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.idempotency.Fingerprint;
import io.payonce.order.OrderStatus;
import io.quarkus.redis.datasource.RedisDataSource;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.SqlConnection;
import io.vertx.mutiny.sqlclient.Tuple;

/**
 * Direct SQL for tests: cleaning tables before each test, putting rows straight into the state a test starts
 * from when it is about what comes after, and counting rows after it.
 */
@ApplicationScoped
public class TestDatabase {

    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    /** payonce.idempotency.lease as the test profile leaves it. */
    private static final Duration OWNERS_LEASE = Duration.ofSeconds(30);
    /** A time on the database's clock, as the service sets ages and leases: now plus a number of microseconds. */
    private static final String FROM_NOW = "DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND)";
    private static final String[] TABLES = { "payments", "orders", "idempotency_tokens", "sandbox_charges",
            "sandbox_attempts" };

    private final Pool pool;
    private final RedisDataSource redis;

    TestDatabase(Pool pool, RedisDataSource redis) {
        this.pool = pool;
        this.redis = redis;
    }

    /**
     * Empties the tables, and drops PayOnce's keys from Redis (only those, by their prefix): a cached
     * answer must not outlive the token row it copies.
     */
    public void clean() {
        for (String table : TABLES) {
            pool.query("DELETE FROM " + table).execute().await().atMost(TIMEOUT);
        }
        forgetCachedAnswers();
    }

    /** Drops PayOnce's keys from Redis, as a flush or an eviction would; MySQL keeps every answer. */
    public void forgetCachedAnswers() {
        try {
            for (String key : redis.key().keys("po:*")) {
                redis.key().del(key);
            }
        } catch (RuntimeException redisDown) {
            // tests that run without Redis have nothing cached there
        }
    }

    /** A Redis string value (null for none), as the fast path stored it. */
    public String redisGet(String key) {
        return redis.value(String.class).get(key);
    }

    /** Overwrites a Redis string value, keeping no expiry. */
    public void redisSet(String key, String value) {
        redis.value(String.class).set(key, value);
    }

    /** The single number a {@code SELECT COUNT(*) ...} answers. */
    public long count(String sql, Object... args) {
        Row row = pool.preparedQuery(sql).execute(Tuple.from(args)).await().atMost(TIMEOUT).iterator().next();
        return row.getLong(0);
    }

    public long payments(String merchantId, String orderNo) {
        return count("SELECT COUNT(*) FROM payments WHERE merchant_id = ? AND order_no = ?", merchantId, orderNo);
    }

    public long orders(String merchantId) {
        return count("SELECT COUNT(*) FROM orders WHERE merchant_id = ?", merchantId);
    }

    /** What refunds in flight hold reserved on an order of {@link Fixtures#MERCHANT} (not in any answer). */
    public long reservedAmount(String orderNo) {
        return pool.preparedQuery("SELECT reserved_amount FROM orders WHERE merchant_id = ? AND order_no = ?")
                .execute(Tuple.of(Fixtures.MERCHANT, orderNo)).await().atMost(TIMEOUT).iterator().next()
                .getLong("reserved_amount");
    }

    public String tokenState(String merchantId, String token) {
        var rows = pool.preparedQuery("SELECT state FROM idempotency_tokens WHERE merchant_id = ? AND token = ?")
                .execute(Tuple.of(merchantId, token)).await().atMost(TIMEOUT);
        return rows.size() == 0 ? null : rows.iterator().next().getString("state");
    }

    /** Never used (an issued token has no row until its first use), or released for a retry. */
    public boolean tokenUnused(String merchantId, String token) {
        String state = tokenState(merchantId, token);
        return state == null || "AVAILABLE".equals(state);
    }

    /**
     * An order of {@link Fixtures#MERCHANT} for {@link Fixtures#AMOUNT} {@link Fixtures#CURRENCY} in {@code status},
     * at the version the path PENDING, PAYING, PAID gives it; answers its number.
     */
    public String orderIn(OrderStatus status) {
        String orderNo = Fixtures.id("ord");
        insertOrder(orderNo, status);
        return orderNo;
    }

    /**
     * A token claimed for a fresh request number on {@code orderNo} and still IN_PROGRESS with no payment
     * record behind it, its lease ending {@code leaseLeft} from now: past it, an owner that died before it
     * wrote its payment record.
     */
    public PayRequest tokenInProgress(String orderNo, Duration leaseLeft) {
        PayRequest request = new PayRequest(orderNo, Fixtures.id("req"), Fixtures.token(), Fixtures.AMOUNT);
        insertTokenInProgress(request, leaseLeft);
        return request;
    }

    /**
     * A payment whose owner has just sent its charge and not heard back, with its lease running: the order
     * PAYING, the payment PROCESSING, the token IN_PROGRESS. Nothing is at the channel.
     */
    public PayRequest paymentProcessing() {
        return paymentProcessing(Duration.ZERO, OWNERS_LEASE);
    }

    /**
     * {@link #paymentProcessing()} written {@code age} ago, its owner's lease on payment and token ending
     * {@code leaseLeft} from now (negative: the owner is gone, as a crash or an unknown outcome leaves it).
     */
    public PayRequest paymentProcessing(Duration age, Duration leaseLeft) {
        PayRequest request = new PayRequest(Fixtures.id("ord"), Fixtures.id("req"), Fixtures.token(), Fixtures.AMOUNT);
        insertOrder(request.orderNo(), OrderStatus.PAYING);
        insertTokenInProgress(request, leaseLeft);
        insertPayment(request, age, leaseLeft);
        return request;
    }

    /** A PROCESSING payment of a caller without a token (a job, a queue consumer), {@code age} old, leased to nobody. */
    public PayRequest paymentProcessingWithoutToken(Duration age) {
        PayRequest request = new PayRequest(Fixtures.id("ord"), Fixtures.id("req"), null, Fixtures.AMOUNT);
        insertOrder(request.orderNo(), OrderStatus.PAYING);
        insertPayment(request, age, null);
        return request;
    }

    private void insertOrder(String orderNo, OrderStatus status) {
        int version = switch (status) {
            case PENDING -> 0;
            case PAYING -> 1;
            case PAID -> 2;
            case PARTIALLY_REFUNDED -> 3;
            case REFUNDED -> 4;
        };
        execute("INSERT INTO orders (merchant_id, order_no, amount, currency, status, version, created_at, updated_at)"
                + " VALUES (?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))", Fixtures.MERCHANT, orderNo,
                Fixtures.AMOUNT, Fixtures.CURRENCY, status.name(), version);
    }

    /** Bound to the request's fingerprint as its first use binds it: the body names no currency. */
    private void insertTokenInProgress(PayRequest request, Duration leaseLeft) {
        execute("INSERT INTO idempotency_tokens (merchant_id, token, state, fingerprint, request_no, lease_until,"
                + " expires_at) VALUES (?, ?, 'IN_PROGRESS', ?, ?, " + FROM_NOW + ", UTC_TIMESTAMP(3) + INTERVAL 1 DAY)",
                Fixtures.MERCHANT, request.token(),
                Fingerprint.of(Fixtures.MERCHANT, request.orderNo(), request.requestNo(), request.amount(), null),
                request.requestNo(), micros(leaseLeft));
    }

    /** {@code leaseLeft} null: leased to nobody (an interval of NULL makes the lease NULL). */
    private void insertPayment(PayRequest request, Duration age, Duration leaseLeft) {
        execute("INSERT INTO payments (merchant_id, request_no, order_no, token, amount, currency, status, created_at,"
                + " updated_at, lease_until) VALUES (?, ?, ?, ?, ?, ?, 'PROCESSING', " + FROM_NOW + ", UTC_TIMESTAMP(3), "
                + FROM_NOW + ")", Fixtures.MERCHANT, request.requestNo(),
                request.orderNo(), request.token(), request.amount(), Fixtures.CURRENCY, -micros(age),
                leaseLeft == null ? null : micros(leaseLeft));
    }

    private static long micros(Duration duration) {
        return duration.toNanos() / 1_000;
    }

    public void execute(String sql, Object... args) {
        pool.preparedQuery(sql).execute(Tuple.from(args)).await().atMost(TIMEOUT);
    }

    /**
     * Runs {@code sql} in a transaction of its own and leaves it open, its row locks held, until the answer is
     * closed, which commits it: another session's write of the same rows waits meanwhile, as behind a claim
     * whose COMMIT has not come yet. Closing it again does nothing.
     */
    public AutoCloseable uncommitted(String sql, Object... args) {
        SqlConnection conn = pool.getConnection().await().atMost(TIMEOUT);
        conn.query("BEGIN").execute().await().atMost(TIMEOUT);
        conn.preparedQuery(sql).execute(Tuple.from(args)).await().atMost(TIMEOUT);
        AtomicBoolean committed = new AtomicBoolean();
        return () -> {
            if (!committed.compareAndSet(false, true)) {
                return;
            }
            try {
                conn.query("COMMIT").execute().await().atMost(TIMEOUT);
            } finally {
                conn.close().await().atMost(TIMEOUT);
            }
        };
    }

    /**
     * Locks {@code table} for writing on a connection of its own (LOCK TABLES ... WRITE) until the answer is
     * closed: every other session's statement on it, a plain read included, waits, as on a database that stops
     * answering for that table.
     */
    public AutoCloseable lockTable(String table) {
        SqlConnection conn = pool.getConnection().await().atMost(TIMEOUT);
        conn.query("LOCK TABLES " + table + " WRITE").execute().await().atMost(TIMEOUT);
        return () -> {
            try {
                conn.query("UNLOCK TABLES").execute().await().atMost(TIMEOUT);
            } finally {
                conn.close().await().atMost(TIMEOUT);
            }
        };
    }
}
