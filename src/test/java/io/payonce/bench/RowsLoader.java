package io.payonce.bench;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Loads N orders, N payments and N tokens into a migrated PayOnce schema in bulk, for the benchmark's
 * ten-million-row pass (scripts/bench-rows.sh): {@code INSERT ... SELECT} from a generated sequence (a
 * 1,000-row table of digits joined with itself), a chunk of {@value #CHUNK} rows a statement, never through
 * the API. Plain SQL that MySQL 8 runs as well as MariaDB (MD5, CONCAT, LPAD, TIMESTAMPADD, DATE_FORMAT).
 *
 * <p>Row n of each table belongs together: order {@code ord_n}, its payment {@code req_n} and the token that
 * paid it, spread over 1,000 merchants {@code load_m0000} to {@code load_m0999} and created over the 30 days
 * before the load. As production holds them: 96 % paid (payment SUCCEEDED, token COMPLETED with the stored
 * 200 answer), 2 % declined (payment FAILED, order back to PENDING, the stored 402), 2 % refunded in full (the
 * order REFUNDED; no refund records are loaded). A backlog of {@link #backlog} payments is PROCESSING (order
 * PAYING, token IN_PROGRESS with the stored 202, both leases long over) and postponed by reconciliation past
 * any run, so that every reconciliation run and gauge reads them and none settles them: a later run finds
 * the same backlog. 5 % of the tokens expired before the load; the others expire years after it, so that a
 * data directory kept for a later run holds no more expired tokens than it was loaded with ({@code topup}
 * puts back those a pass purged).
 *
 * <p>{@code java RowsLoader load|topup|sizes} with {@code -Drows.port}, {@code -Drows.db}, {@code -Drows.n}.
 */
public final class RowsLoader {

    /** Rows a statement: a transaction small enough for the redo log and the undo of one chunk. */
    static final int CHUNK = 100_000;
    /** The share of tokens expired when loaded, in percent. */
    static final int EXPIRED_PCT = 5;
    private static final long HISTORY_MICROS = ChronoUnit.DAYS.getDuration().multipliedBy(30).toNanos() / 1000;
    private static final DateTimeFormatter SQL_TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS")
            .withZone(ZoneOffset.UTC);

    /** The sequence: 0 to 999; n = base + 1000 * a + b + 1. */
    private static final String DIGITS = """
            CREATE TABLE load_digits (d INT NOT NULL, PRIMARY KEY (d))""";

    private static final String SEQUENCE = """
            (SELECT %d + 1000 * a.d + b.d + 1 AS n FROM load_digits a CROSS JOIN load_digits b
             WHERE a.d < %d AND %d + 1000 * a.d + b.d + 1 <= %d) s""";

    /**
     * Columns of row n shared by the three tables: {@code %1$s} the load's time, {@code %2$d} the backlog's step,
     * {@code %3$d} N, {@code %4$d} microseconds between rows, {@code %5$d} 1 for rows that are all paid (a top-up).
     */
    private static final String ROW = """
            CONCAT('load_m', LPAD(n %% 1000, 4, '0')) AS merchant_id, CONCAT('ord_', n) AS order_no,
            CONCAT('req_', n) AS request_no,
            CONCAT('tok_', LEFT(CONCAT(MD5(CONCAT('t', n)), MD5(CONCAT('u', n))), 52)) AS token,
            100 + (n * 7919) %% 99900 AS amount,
            TIMESTAMPADD(MICROSECOND, -ABS(%3$d - n) * %4$d, '%1$s') AS created_at,
            CASE WHEN %5$d = 1 THEN 'PAID' WHEN n %% %2$d = 0 THEN 'PROCESSING' WHEN n %% 100 < 2 THEN 'DECLINED'
                 WHEN n %% 100 < 4 THEN 'REFUNDED' ELSE 'PAID' END AS fate""";

    private static final String ORDERS = """
            INSERT INTO orders (id, merchant_id, order_no, amount, currency, status, version, created_at, updated_at,
                refunded_amount, reserved_amount)
            SELECT n, merchant_id, order_no, amount, 'USD',
                CASE fate WHEN 'PROCESSING' THEN 'PAYING' WHEN 'DECLINED' THEN 'PENDING' ELSE fate END,
                CASE fate WHEN 'PROCESSING' THEN 1 WHEN 'REFUNDED' THEN 3 ELSE 2 END,
                created_at, TIMESTAMPADD(SECOND, 1, created_at),
                CASE fate WHEN 'REFUNDED' THEN amount ELSE 0 END, 0
            FROM (SELECT n, %s FROM %s) r ORDER BY n""";

    private static final String PAYMENTS = """
            INSERT INTO payments (id, merchant_id, request_no, order_no, token, amount, currency, status, failure,
                channel_txn_id, created_at, updated_at, lease_until, reconcile_after, reconcile_claim,
                reconcile_attempts, epoch, kind)
            SELECT n, merchant_id, request_no, order_no, token, amount, 'USD',
                CASE fate WHEN 'PROCESSING' THEN 'PROCESSING' WHEN 'DECLINED' THEN 'FAILED' ELSE 'SUCCEEDED' END,
                CASE fate WHEN 'DECLINED' THEN 'DECLINED' END,
                CASE WHEN fate IN ('PAID', 'REFUNDED') THEN CONCAT('sbx_', MD5(CONCAT('x', n))) END,
                created_at, TIMESTAMPADD(SECOND, 1, created_at), TIMESTAMPADD(SECOND, 30, created_at),
                CASE fate WHEN 'PROCESSING' THEN TIMESTAMPADD(YEAR, 10, '%s') END, NULL,
                CASE fate WHEN 'PROCESSING' THEN 10 ELSE 0 END,
                CASE fate WHEN 'PROCESSING' THEN 11 ELSE 1 END, 'CHARGE'
            FROM (SELECT n, %s FROM %s) r ORDER BY n""";

    /**
     * {@code %1$s} the load's time, {@code %2$d} 1 when every token is to be expired (a top-up), {@code %3$s}
     * the row's columns, {@code %4$s} the sequence.
     */
    private static final String TOKENS = """
            INSERT INTO idempotency_tokens (id, merchant_id, token, state, fingerprint, request_no, lease_until,
                response_status, response_body, expires_at, created_at, updated_at, epoch)
            SELECT n, merchant_id, token, CASE fate WHEN 'PROCESSING' THEN 'IN_PROGRESS' ELSE 'COMPLETED' END,
                CONCAT(MD5(CONCAT('f', n)), MD5(CONCAT('g', n))), request_no,
                CASE fate WHEN 'PROCESSING' THEN TIMESTAMPADD(SECOND, 30, created_at) END,
                CASE fate WHEN 'PROCESSING' THEN 202 WHEN 'DECLINED' THEN 402 ELSE 200 END,
                CASE fate
                  WHEN 'PROCESSING' THEN CONCAT('{"order_no":"', order_no, '","request_no":"', request_no,
                      '","status":"PROCESSING"}')
                  WHEN 'DECLINED' THEN CONCAT('{"type":"https://payonce.io/problems/payment_declined",',
                      '"title":"Payment declined","status":402,"detail":"the channel declined the charge; the order',
                      ' can be paid with a new token and request_no","code":"payment_declined","order_no":"',
                      order_no, '","request_no":"', request_no, '"}')
                  ELSE CONCAT('{"order_no":"', order_no, '","request_no":"', request_no, '","amount":', amount,
                      ',"currency":"USD","status":"PAID","channel_txn_id":"sbx_', MD5(CONCAT('x', n)),
                      '","paid_at":"', DATE_FORMAT(TIMESTAMPADD(SECOND, 1, created_at), '%%Y-%%m-%%dT%%H:%%i:%%s.%%fZ'),
                      '"}') END,
                CASE WHEN fate = 'PROCESSING' THEN TIMESTAMPADD(YEAR, 10, '%1$s')
                     WHEN %2$d = 1 OR n %% 100 >= %5$d THEN TIMESTAMPADD(HOUR, -1, LEAST(TIMESTAMPADD(DAY, 1, created_at), '%1$s'))
                     ELSE TIMESTAMPADD(YEAR, 10, created_at) END,
                created_at, TIMESTAMPADD(SECOND, 1, created_at), CASE fate WHEN 'PROCESSING' THEN 11 ELSE 1 END
            FROM (SELECT n, %3$s FROM %4$s) r ORDER BY n""";

    /** Tokens expired and not in progress: what the purge deletes. */
    private static final String PURGEABLE = """
            SELECT COUNT(*) FROM idempotency_tokens WHERE expires_at < UTC_TIMESTAMP(3) AND state <> 'IN_PROGRESS'""";

    private final String url;
    private final long n;
    private final String at;

    private RowsLoader(String url, long n, Instant at) {
        this.url = url;
        this.n = n;
        this.at = SQL_TIME.format(at);
    }

    /** PROCESSING payments in a load of {@code n}: one in ten thousand, at least 100. */
    static long backlog(long n) {
        return Math.max(100, n / 10_000);
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:mariadb://127.0.0.1:" + System.getProperty("rows.port", "3407") + "/"
                + System.getProperty("rows.db", "payonce_bench") + "?user=root&sessionVariables=unique_checks=0";
        RowsLoader loader = new RowsLoader(url, Long.parseLong(System.getProperty("rows.n", "10000000")),
                Instant.now().truncatedTo(ChronoUnit.MILLIS));
        switch (args.length > 0 ? args[0] : "") {
            case "load" -> loader.load();
            case "topup" -> loader.topUp();
            case "sizes" -> System.out.print(loader.sizes());
            default -> {
                System.err.println("usage: RowsLoader load|topup|sizes (-Drows.port, -Drows.db, -Drows.n)");
                System.exit(1);
            }
        }
    }

    private String row(boolean topUp) {
        return ROW.formatted(at, n / backlog(n), n, HISTORY_MICROS / n, topUp ? 1 : 0);
    }

    /** The rows [from, to) of the sequence 1..to, as a derived table. */
    private static String sequence(long from, long to) {
        long thousands = Math.min(CHUNK, to - from + 999) / 1000;
        return SEQUENCE.formatted(from - 1, thousands, from - 1, to);
    }

    private void load() throws Exception {
        long began = System.nanoTime();
        try (Connection c = connect(); Statement s = c.createStatement()) {
            digits(s);
        }
        // two connections, as the machine has two cores: orders and payments on one, the larger tokens on the other
        ExecutorService workers = Executors.newFixedThreadPool(2);
        try {
            Future<?> ordersAndPayments = workers.submit(() -> {
                chunks("orders", from -> ORDERS.formatted(row(false), sequence(from, Math.min(n, from + CHUNK - 1))));
                chunks("payments", from -> PAYMENTS.formatted(at, row(false), sequence(from, Math.min(n, from + CHUNK - 1))));
                return null;
            });
            Future<?> tokens = workers.submit(() -> {
                chunks("tokens", from -> TOKENS.formatted(at, 0, row(false), sequence(from, Math.min(n, from + CHUNK - 1)),
                        100 - EXPIRED_PCT));
                return null;
            });
            ordersAndPayments.get();
            tokens.get();
        } finally {
            workers.shutdownNow();
        }
        try (Connection c = connect(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE load_digits");
            // fresh statistics for the optimizer, as a server that has grown to this size would have
            s.execute("ANALYZE TABLE orders, payments, idempotency_tokens");
        }
        System.err.printf(Locale.ROOT, "loaded %,d orders, payments and tokens in %.0f s%n", n,
                (System.nanoTime() - began) / 1e9);
    }

    /** The sequence's table of digits, made anew. */
    private static void digits(Statement s) throws SQLException {
        s.execute("DROP TABLE IF EXISTS load_digits");
        s.execute(DIGITS);
        StringBuilder digits = new StringBuilder("INSERT INTO load_digits (d) VALUES (0)");
        for (int d = 1; d < 1000; d++) {
            digits.append(",(").append(d).append(')');
        }
        s.execute(digits.toString());
    }

    /** A statement for the chunk that starts at row {@code from}. */
    @FunctionalInterface
    private interface Chunk {
        String sql(long from);
    }

    private void chunks(String table, Chunk chunk) throws SQLException {
        long began = System.nanoTime();
        try (Connection c = connect(); Statement s = c.createStatement()) {
            for (long from = 1; from <= n; from += CHUNK) {
                s.executeUpdate(chunk.sql(from));
                long done = Math.min(n, from + CHUNK - 1);
                if (done % (10L * CHUNK) == 0 || done == n) {
                    double seconds = (System.nanoTime() - began) / 1e9;
                    System.err.printf(Locale.ROOT, "  %s: %,d rows in %.0f s (%,.0f/s)%n", table, done, seconds,
                            done / seconds);
                }
            }
        }
    }

    /**
     * Puts back the expired tokens a pass purged: as many expired, purgeable tokens as the load made, under ids
     * after every existing one.
     */
    private void topUp() throws SQLException {
        long target = n * EXPIRED_PCT / 100;
        try (Connection c = connect(); Statement s = c.createStatement()) {
            long purgeable = single(s, PURGEABLE);
            long missing = target - purgeable;
            if (missing <= 0) {
                System.err.printf(Locale.ROOT, "expired tokens: %,d, as loaded%n", purgeable);
                return;
            }
            long first = single(s, "SELECT COALESCE(MAX(id), 0) FROM idempotency_tokens") + 1;
            digits(s);
            for (long from = first; from < first + missing; from += CHUNK) {
                s.executeUpdate(TOKENS.formatted(at, 1, row(true), sequence(from, Math.min(first + missing - 1,
                        from + CHUNK - 1)), 100 - EXPIRED_PCT));
            }
            s.execute("DROP TABLE load_digits");
            System.err.printf(Locale.ROOT, "expired tokens: %,d found, %,d added back%n", purgeable, missing);
        }
    }

    /** Rows, data and index sizes of the three tables, and the total, as InnoDB reports them. */
    private String sizes() throws SQLException {
        StringBuilder out = new StringBuilder();
        try (Connection c = connect(); Statement s = c.createStatement();
                ResultSet rows = s.executeQuery("""
                        SELECT TABLE_NAME, TABLE_ROWS, DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES
                        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('orders', 'payments', 'idempotency_tokens')
                        ORDER BY TABLE_NAME""")) {
            long data = 0;
            long index = 0;
            while (rows.next()) {
                data += rows.getLong(3);
                index += rows.getLong(4);
                out.append(String.format(Locale.ROOT, "%-20s about %,13d rows, data %,7.0f MiB, indexes %,7.0f MiB%n",
                        rows.getString(1), rows.getLong(2), rows.getLong(3) / 1048576.0, rows.getLong(4) / 1048576.0));
            }
            out.append(String.format(Locale.ROOT, "%-20s %19s data %,7.0f MiB, indexes %,7.0f MiB%n", "total", "",
                    data / 1048576.0, index / 1048576.0));
        }
        return out.toString();
    }

    private static long single(Statement s, String sql) throws SQLException {
        try (ResultSet rows = s.executeQuery(sql)) {
            rows.next();
            return rows.getLong(1);
        }
    }

    private Connection connect() throws SQLException {
        return DriverManager.getConnection(url);
    }
}
