package io.payonce.bench;

import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.mysqlclient.MySQLBuilder;
import io.vertx.mysqlclient.MySQLConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnectOptions;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;

/**
 * The benchmark's own connection to MariaDB: the server's commit counter, the row counts that check a
 * scenario's outcome, and the pools the machine-limit measurement uses.
 *
 * <p>Commits are counted with InnoDB's {@code trx_rw_commits} metric: it counts one per read-write
 * transaction, an autocommit INSERT or UPDATE included (even an UPDATE that matches no row), and not
 * plain SELECTs. {@code SHOW GLOBAL STATUS} has no such counter: {@code Handler_commit} also counts
 * read-only statements and counts an explicit transaction several times, {@code Com_commit} misses
 * autocommit writes. The metric is server-wide, so other clients' writes during a window would be
 * counted too; {@code information_schema.TABLE_STATISTICS} (userstat) tells whether any other schema
 * changed rows meanwhile, and the report says so.
 *
 * <p>On a Galera cluster the connection that reads counters and checks goes to one node, and a pool for the
 * machine limits spreads its connections over the nodes the application's instances use.
 */
final class Database implements AutoCloseable {

    /** The schema Flyway migrated for the application under test. */
    private final String schema;
    /** The server, or the cluster nodes the application uses: the admin connection goes to the first. */
    private final List<SqlConnectOptions> connect;
    private final Vertx vertx;
    private final Pool admin;
    private boolean enabledMonitor;
    private boolean enabledUserstat;

    /** A point-in-time reading of the server's write counters and of its statement counters. */
    record Counters(long rwCommits, Map<String, Long> rowsChanged, Map<String, Long> statements) {
    }

    /** What happened between two readings; statements by command (com_stmt_execute ...), server-wide. */
    record Delta(long rwCommits, long foreignRowsChanged, Map<String, Long> ownRowsChanged,
            Map<String, Long> statements) {
    }

    /**
     * Statement counters worth a per-payment figure: how many round trips a payment costs the server,
     * and the internal temporary tables its statements made (on disk: a file created and removed each).
     */
    private static final String STATEMENTS = """
            SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
            WHERE VARIABLE_NAME IN ('COM_STMT_PREPARE', 'COM_STMT_EXECUTE', 'COM_STMT_CLOSE', 'COM_BEGIN',
                                    'COM_COMMIT', 'QUESTIONS', 'CREATED_TMP_TABLES', 'CREATED_TMP_DISK_TABLES')""";

    /**
     * The application's schema on the server at {@code ports} (one), or on the cluster nodes the application's
     * instances use (several).
     */
    Database(Vertx vertx, String host, List<Integer> ports, String schema, String user, String password,
            boolean cachePreparedStatements) {
        this.vertx = vertx;
        this.schema = schema;
        this.connect = ports.stream().<SqlConnectOptions>map(port -> new MySQLConnectOptions().setHost(host)
                .setPort(port).setDatabase(schema).setUser(user).setPassword(password)
                // as the application's datasource: an UPDATE reports the rows it changed, and prepared
                // statements are cached or not as the application has them
                .setUseAffectedRows(true)
                .setCachePreparedStatements(cachePreparedStatements)).toList();
        this.admin = MySQLBuilder.pool().with(new PoolOptions().setMaxSize(2)).connectingTo(connect.get(0))
                .withConnectHandler(Database::waitForTheCluster).using(vertx).build();
    }

    String schema() {
        return schema;
    }

    /** A pool like the application's reactive datasource, its connections spread over every server given. */
    Pool pool(int size) {
        return MySQLBuilder.pool().with(new PoolOptions().setMaxSize(size)).connectingTo(connect)
                .withConnectHandler(Database::waitForTheCluster).using(vertx).build();
    }

    /**
     * As the application's connections (its CausalReads): on a Galera node a read first waits until the node
     * has applied what the cluster committed before it, so a check right after a scenario sees every row of
     * it; a server without a cluster ignores the setting. The handler hands the connection to the pool by
     * closing it.
     */
    private static void waitForTheCluster(SqlConnection conn) {
        conn.query("SET SESSION wsrep_sync_wait = 1").execute().onComplete(set -> conn.close());
    }

    /**
     * The Galera counters of this server ({@code wsrep_replicated} ...) that are numbers, by lower-case name;
     * empty on a server without a cluster.
     */
    Future<Map<String, Long>> clusterStatus() {
        return admin.query("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
                + " WHERE VARIABLE_NAME LIKE 'WSREP\\_%'").execute().map(rows -> {
                    Map<String, Long> status = new HashMap<>();
                    for (Row row : rows) {
                        String value = row.getString(1);
                        if (value != null && value.matches("-?\\d+")) {
                            status.put(row.getString(0).toLowerCase(Locale.ROOT), Long.parseLong(value));
                        }
                    }
                    return status;
                });
    }

    /** Turns the commit metric and table statistics on if they are off; {@link #close} turns them back off. */
    Future<Void> enableCounters() {
        return admin.query("SELECT ENABLED FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rw_commits'")
                .execute()
                .compose(rows -> {
                    enabledMonitor = rows.iterator().next().getInteger(0) == 0;
                    return enabledMonitor
                            ? admin.query("SET GLOBAL innodb_monitor_enable = 'trx_rw_commits'").execute().mapEmpty()
                            : Future.succeededFuture();
                })
                .compose(v -> admin.query("SELECT @@userstat").execute())
                .compose(rows -> {
                    enabledUserstat = rows.iterator().next().getInteger(0) == 0;
                    return enabledUserstat
                            ? admin.query("SET GLOBAL userstat = 1").execute().mapEmpty()
                            : Future.succeededFuture();
                });
    }

    Future<Counters> counters() {
        return admin.query("SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rw_commits'")
                .execute()
                .compose(commits -> admin.query(
                        "SELECT TABLE_SCHEMA, TABLE_NAME, ROWS_CHANGED FROM information_schema.TABLE_STATISTICS")
                        .execute()
                        .compose(tables -> admin.query(STATEMENTS).execute().map(status -> {
                            Map<String, Long> changed = new HashMap<>();
                            for (Row row : tables) {
                                changed.put(row.getString(0) + "." + row.getString(1), row.getLong(2));
                            }
                            Map<String, Long> statements = new HashMap<>();
                            for (Row row : status) {
                                statements.put(row.getString(0).toLowerCase(Locale.ROOT), Long.parseLong(row.getString(1)));
                            }
                            return new Counters(commits.iterator().next().getLong(0), changed, statements);
                        })));
    }

    /**
     * The change between two readings. A table dropped meanwhile (another client's test cleaning up) has
     * no second reading and is left out; a table that appeared counts in full.
     */
    Delta delta(Counters before, Counters after) {
        long foreign = 0;
        Map<String, Long> own = new HashMap<>();
        for (Map.Entry<String, Long> e : after.rowsChanged().entrySet()) {
            long changed = e.getValue() - before.rowsChanged().getOrDefault(e.getKey(), 0L);
            if (changed <= 0) {
                continue;
            }
            if (e.getKey().startsWith(schema + ".")) {
                own.put(e.getKey().substring(schema.length() + 1), changed);
            } else {
                foreign += changed;
            }
        }
        Map<String, Long> statements = new HashMap<>();
        after.statements().forEach((name, value) -> statements.put(name,
                value - before.statements().getOrDefault(name, 0L)));
        return new Delta(after.rwCommits() - before.rwCommits(), foreign, own, statements);
    }

    /** One number from a query over the application's tables; -1 when it fails (a schema that moved on). */
    Future<Long> count(String sql, Object... params) {
        return admin.preparedQuery(sql).execute(Tuple.from(params))
                .map(rows -> rows.iterator().next().getLong(0))
                .otherwise(-1L);
    }

    /** Rows per value of the first column, e.g. payment records per order; empty when the query fails. */
    Future<Map<String, Long>> countBy(String sql, Object... params) {
        return admin.preparedQuery(sql).execute(Tuple.from(params)).map(rows -> {
            Map<String, Long> counts = new HashMap<>();
            for (Row row : rows) {
                counts.put(row.getString(0), row.getLong(1));
            }
            return counts;
        }).otherwise(new HashMap<>());
    }

    Future<String> describeServer() {
        return admin.query("SELECT VERSION(), @@innodb_flush_log_at_trx_commit, @@innodb_buffer_pool_size, @@log_bin")
                .execute()
                .map(rows -> {
                    Row row = rows.iterator().next();
                    return row.getString(0) + " (innodb_flush_log_at_trx_commit=" + row.getValue(1)
                            + ", buffer pool " + row.getLong(2) / (1024 * 1024) + " MiB, binlog "
                            + (String.valueOf(row.getValue(3)).equals("1") ? "on" : "off") + ")";
                });
    }

    /** The Galera provider and how the node applies the others' write sets, for the report's header. */
    Future<String> describeCluster() {
        return admin.query("SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
                + " WHERE VARIABLE_NAME = 'WSREP_PROVIDER_VERSION'), @@wsrep_slave_threads,"
                + " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE')")
                .execute()
                .map(rows -> {
                    Row row = rows.iterator().next();
                    return "Galera " + row.getString(0) + ", " + row.getValue(2) + " nodes, wsrep_slave_threads="
                            + row.getValue(1);
                });
    }

    Future<String> pidFile() {
        return admin.query("SELECT @@pid_file").execute().map(rows -> rows.iterator().next().getString(0));
    }

    Future<RowSet<Row>> execute(String sql) {
        return admin.query(sql).execute();
    }

    /** Puts the server's counters back as they were found; the application's schema stays for inspection. */
    Future<Void> restoreCounters() {
        Future<Void> monitor = enabledMonitor
                ? admin.query("SET GLOBAL innodb_monitor_disable = 'trx_rw_commits'").execute().mapEmpty()
                : Future.succeededFuture();
        return monitor.compose(v -> enabledUserstat
                ? admin.query("SET GLOBAL userstat = 0").execute().mapEmpty()
                : Future.succeededFuture());
    }

    @Override
    public void close() {
        admin.close();
    }
}
