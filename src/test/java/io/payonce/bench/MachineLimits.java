package io.payonce.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.mysqlclient.MySQLClient;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisAPI;
import io.vertx.redis.client.RedisOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;

/**
 * What this machine's MariaDB and Redis can do at all, through the same reactive clients and pool sizes
 * the application uses: the ceilings a scenario's throughput is compared with.
 */
final class MachineLimits {

    private static final String CREATE_TABLE = """
            CREATE TABLE IF NOT EXISTS bench_limit (
                id         BIGINT      NOT NULL AUTO_INCREMENT,
                k          VARCHAR(64) NOT NULL,
                v          INT         NOT NULL,
                updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
                PRIMARY KEY (id)
            ) ENGINE = InnoDB""";
    private static final String INSERT = "INSERT INTO bench_limit (k, v) VALUES (?, 0)";
    private static final String UPDATE = "UPDATE bench_limit SET v = v + 1, updated_at = CURRENT_TIMESTAMP(3) WHERE id = ?";

    private final Vertx vertx;
    private final Context context;
    private final Database db;
    private final String redisUrl;
    /** The application's quarkus.datasource.reactive.max-size and quarkus.redis.max-pool-size. */
    private final int dbPoolSize;
    private final int redisPoolSize;

    /** A limit: the loop that measured it and the server's commits per operation meanwhile. */
    record Limit(ClosedLoop.Run run, double commitsPerOp, long foreignRowsChanged, Map<String, Long> statements) {
    }

    MachineLimits(Vertx vertx, Context context, Database db, String redisUrl, int dbPoolSize, int redisPoolSize) {
        this.vertx = vertx;
        this.context = context;
        this.db = db;
        this.redisUrl = redisUrl;
        this.dbPoolSize = dbPoolSize;
        this.redisPoolSize = redisPoolSize;
    }

    /**
     * Transactions per second of {@code BEGIN; INSERT one row; UPDATE that row; COMMIT} with
     * {@code concurrency} in flight over a pool of the application's size: the database's side of a
     * payment step, with nothing of the application around it.
     */
    Limit databaseTransactions(int concurrency, long warmMillis, long millis) {
        Pool pool = db.pool(dbPoolSize);
        try {
            Bench.await(db.execute(CREATE_TABLE));
            ClosedLoop.Operation tx = i -> pool.withTransaction(conn -> conn.preparedQuery(INSERT)
                    .execute(Tuple.of("k" + i))
                    .compose(rows -> conn.preparedQuery(UPDATE)
                            .execute(Tuple.of(rows.property(MySQLClient.LAST_INSERTED_ID))))
                    .map(rows -> rows.rowCount() == 1));
            Bench.await(ClosedLoop.run(context, Integer.MAX_VALUE, concurrency, warmMillis, tx));
            Database.Counters before = Bench.await(db.counters());
            ClosedLoop.Run run = Bench.await(ClosedLoop.run(context, Integer.MAX_VALUE, concurrency, millis, tx));
            Database.Delta delta = db.delta(before, Bench.await(db.counters()));
            Bench.await(db.execute("TRUNCATE TABLE bench_limit"));
            return new Limit(run, run.completed() == 0 ? 0 : (double) delta.rwCommits() / run.completed(),
                    delta.foreignRowsChanged(), delta.statements());
        } finally {
            pool.close();
        }
    }

    /**
     * Redis round trips per second, SET and GET alternating over 1024 keys under {@code bench:}, with
     * {@code concurrency} in flight over a pool of the application's size. The keys are deleted after.
     */
    Limit redisRoundTrips(String runId, int concurrency, long warmMillis, long millis) {
        Redis client = Redis.createClient(vertx, new RedisOptions().setConnectionString(redisUrl)
                .setMaxPoolSize(redisPoolSize).setMaxPoolWaiting(1024));
        RedisAPI redis = RedisAPI.api(client);
        int keys = 1024;
        String prefix = "bench:" + runId + ":";
        try {
            ClosedLoop.Operation op = i -> {
                String key = prefix + (i % keys);
                return (i & 1) == 0
                        ? redis.set(List.of(key, "payonce-bench-value")).map(r -> true)
                        : redis.get(key).map(r -> true);
            };
            Bench.await(ClosedLoop.run(context, Integer.MAX_VALUE, concurrency, warmMillis, op));
            ClosedLoop.Run run = Bench.await(ClosedLoop.run(context, Integer.MAX_VALUE, concurrency, millis, op));
            List<String> names = new ArrayList<>();
            for (int i = 0; i < keys; i++) {
                names.add(prefix + i);
            }
            Bench.await(redis.del(names));
            return new Limit(run, 0, 0, Map.of());
        } finally {
            client.close();
        }
    }
}
