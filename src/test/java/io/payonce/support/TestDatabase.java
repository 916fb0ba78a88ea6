package io.payonce.support;

import java.time.Duration;

import jakarta.enterprise.context.ApplicationScoped;

import io.quarkus.redis.datasource.RedisDataSource;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;

/** Direct SQL for tests: cleaning tables before each test and counting rows after it. */
@ApplicationScoped
public class TestDatabase {

    private static final Duration TIMEOUT = Duration.ofSeconds(10);
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
     * A PAYING order of 1999 USD with a PROCESSING payment without token, a minute old and leased to nobody:
     * the state a crash between the charge and its settlement leaves for reconciliation.
     */
    public PayRequest leftProcessing(String merchantId) {
        PayRequest left = new PayRequest(Fixtures.id("ord"), Fixtures.id("req"), null, 1999);
        execute("INSERT INTO orders (merchant_id, order_no, amount, currency, status, version, created_at, updated_at)"
                + " VALUES (?, ?, 1999, 'USD', 'PAYING', 1, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))", merchantId, left.orderNo());
        execute("INSERT INTO payments (merchant_id, request_no, order_no, token, amount, currency, status,"
                + " created_at, updated_at) VALUES (?, ?, ?, NULL, 1999, 'USD', 'PROCESSING',"
                + " UTC_TIMESTAMP(3) - INTERVAL 1 MINUTE, UTC_TIMESTAMP(3))", merchantId, left.requestNo(), left.orderNo());
        return left;
    }

    public void execute(String sql, Object... args) {
        pool.preparedQuery(sql).execute(Tuple.from(args)).await().atMost(TIMEOUT);
    }
}
