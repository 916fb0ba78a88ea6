package io.payonce.bench;

import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/**
 * The plans of the statements that scan for work, on the loaded data of the ten-million-row pass
 * (scripts/bench-rows.sh): the token purge, every statement reconciliation runs to find, claim, read and
 * postpone PROCESSING payments and to release dead token leases, the settlement it makes, and the backlog
 * gauges' count. Each statement is the repository's own text, read from its constant, so the plan is of the
 * SQL the application sends. Each runs under {@code ANALYZE} (executed, then rolled back: nothing changes),
 * which gives the optimizer's estimate ({@code rows}) beside the rows actually read ({@code r_rows}).
 * Prints the plans and a verdict per statement; writes them to the file given.
 *
 * <p>{@code java RowsExplain OUT} with {@code -Drows.port}, {@code -Drows.db}.
 */
public final class RowsExplain {

    private static final String PAYMENTS = "io.payonce.payment.PaymentRepository";
    private static final String TOKENS = "io.payonce.idempotency.TokenRepository";
    /** The reconciler's batch and its purge's, as Reconciler has them. */
    private static final int BATCH = 20;
    private static final int PURGE_BATCH = 500;
    private static final long MIN_AGE_MICROS = 30_000_000L;
    private static final long HOUR_MICROS = 3_600_000_000L;

    private RowsExplain() {
    }

    /** One statement to explain: what it is for, its text, its parameters. */
    private record Explained(String what, String sql, List<Object> params) {
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:mariadb://127.0.0.1:" + System.getProperty("rows.port", "3407") + "/"
                + System.getProperty("rows.db", "payonce_bench") + "?user=root";
        StringBuilder out = new StringBuilder();
        try (Connection c = DriverManager.getConnection(url)) {
            List<Long> ids = new ArrayList<>();
            try (Statement s = c.createStatement();
                    ResultSet rows = s.executeQuery("SELECT id FROM payments FORCE INDEX (ix_payments_backlog)"
                            + " WHERE status = 'PROCESSING' ORDER BY id LIMIT " + BATCH)) {
                while (rows.next()) {
                    ids.add(rows.getLong(1));
                }
            }
            if (ids.isEmpty()) {
                throw new IllegalStateException("no PROCESSING payment: not a loaded database");
            }
            String[] token = new String[2];
            long[] order = new long[2];
            try (Statement s = c.createStatement(); ResultSet rows = s.executeQuery("""
                    SELECT p.merchant_id, p.token, o.id, o.version FROM payments p
                    JOIN orders o ON o.merchant_id = p.merchant_id AND o.order_no = p.order_no WHERE p.id = """
                    + ids.get(0))) {
                rows.next();
                token[0] = rows.getString(1);
                token[1] = rows.getString(2);
                order[0] = rows.getLong(3);
                order[1] = rows.getLong(4);
            }
            String marks = String.join(", ", Collections.nCopies(ids.size(), "?"));
            List<Explained> statements = new ArrayList<>();
            statements.add(new Explained("purge of expired tokens, one batch (Reconciler.purgeExpired)",
                    constant(TOKENS, "PURGE_EXPIRED"), List.of(now(), "IN_PROGRESS", PURGE_BATCH)));
            statements.add(new Explained("reconciliation: PROCESSING payments to take over",
                    constant(PAYMENTS, "RECONCILABLE"), List.of("PROCESSING", MIN_AGE_MICROS, BATCH)));
            List<Object> claim = new ArrayList<>(List.of(60_000_000L, "00000000-0000-0000-0000-000000000000"));
            claim.addAll(ids);
            claim.add("PROCESSING");
            statements.add(new Explained("reconciliation: their claim, by primary key",
                    constant(PAYMENTS, "CLAIM_FOR_RECONCILE").formatted(marks), claim));
            List<Object> claimed = new ArrayList<>(List.of(HOUR_MICROS));
            claimed.addAll(ids);
            claimed.add("00000000-0000-0000-0000-000000000000");
            claimed.add("PROCESSING");
            statements.add(new Explained("reconciliation: the claimed payments read back",
                    constant(PAYMENTS, "CLAIMED").formatted(marks), claimed));
            statements.add(new Explained("reconciliation: a payment postponed",
                    constant(PAYMENTS, "POSTPONE"), List.of(5_000_000L, ids.get(0), "PROCESSING", 11)));
            statements.add(new Explained("reconciliation: a payment settled (with its order and token)",
                    constant(PAYMENTS, "SETTLE"), List.of(order[0], token[1], "IN_PROGRESS", "SUCCEEDED", "",
                            "sbx_explain", now(), "PAID", now(), "COMPLETED", 200, "{}", now(), ids.get(0),
                            "PROCESSING", "PAYING", order[1])));
            statements.add(new Explained("reconciliation: dead token leases to release",
                    constant(TOKENS, "DEAD_LEASES"), List.of("IN_PROGRESS", BATCH * 5)));
            statements.add(new Explained("reconciliation: a dead lease released, by key",
                    constant(TOKENS, "RELEASE_DEAD").formatted("(t.merchant_id = ? AND t.token = ?)"),
                    List.of("AVAILABLE", now(), token[0], token[1], "IN_PROGRESS")));
            statements.add(new Explained("backlog gauges: PROCESSING payments by kind (ProcessingBacklog)",
                    constant(PAYMENTS, "BACKLOG"), List.of(HOUR_MICROS, "PROCESSING")));
            c.setAutoCommit(false);
            for (Explained e : statements) {
                out.append(explain(c, e)).append('\n');
                c.rollback();
            }
        }
        System.out.print(out);
        if (args.length > 0) {
            Files.writeString(Path.of(args[0]), out.toString());
        }
    }

    /** Now in UTC, bound as the application binds its times (a DATETIME, never a string). */
    private static LocalDateTime now() {
        return LocalDateTime.now(ZoneOffset.UTC).truncatedTo(ChronoUnit.MILLIS);
    }

    /** A repository's SQL constant, as the application sends it. */
    private static String constant(String repository, String name) throws ReflectiveOperationException {
        Field field = Class.forName(repository).getDeclaredField(name);
        field.setAccessible(true);
        return (String) field.get(null);
    }

    /** The statement's plan under ANALYZE, as a table, and a verdict on it. */
    private static String explain(Connection c, Explained e) throws SQLException {
        StringBuilder out = new StringBuilder();
        out.append("== ").append(e.what()).append('\n');
        out.append(e.sql().strip().replaceAll("\\s+", " ")).append('\n');
        List<String> verdicts = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement("ANALYZE " + e.sql())) {
            for (int i = 0; i < e.params().size(); i++) {
                s.setObject(i + 1, e.params().get(i));
            }
            try (ResultSet rows = s.executeQuery()) {
                ResultSetMetaData meta = rows.getMetaData();
                List<String[]> table = new ArrayList<>();
                String[] names = new String[meta.getColumnCount()];
                for (int i = 0; i < names.length; i++) {
                    names[i] = meta.getColumnLabel(i + 1);
                }
                table.add(names);
                while (rows.next()) {
                    String[] line = new String[names.length];
                    for (int i = 0; i < names.length; i++) {
                        line[i] = String.valueOf(rows.getString(i + 1));
                    }
                    table.add(line);
                    verdicts.add(verdict(names, line));
                }
                out.append(render(table));
            }
        }
        verdicts.forEach(v -> out.append("   -> ").append(v).append('\n'));
        return out.toString();
    }

    /** How one table of the plan is read: the index, whether it covers the statement, rows estimated and read. */
    private static String verdict(String[] names, String[] line) {
        String table = column(names, line, "table");
        String type = column(names, line, "type");
        String key = column(names, line, "key");
        String extra = column(names, line, "Extra");
        String how = type.equals("ALL") ? "FULL TABLE SCAN" : type.equals("index") ? "FULL INDEX SCAN"
                : key.equals("null") ? "no index (" + type + ")" : type + " on " + key;
        String covering = extra.contains("Using index") && !extra.contains("Using index condition")
                ? "index-only (the index covers it)" : "reads the rows the index finds";
        return String.format(Locale.ROOT, "%s: %s, %s; rows estimated %s, read %s", table, how, covering,
                column(names, line, "rows"), column(names, line, "r_rows"));
    }

    private static String column(String[] names, String[] line, String name) {
        for (int i = 0; i < names.length; i++) {
            if (names[i].equalsIgnoreCase(name)) {
                return line[i];
            }
        }
        return "?";
    }

    private static String render(List<String[]> table) {
        int[] widths = new int[table.get(0).length];
        for (String[] line : table) {
            for (int i = 0; i < line.length; i++) {
                widths[i] = Math.max(widths[i], line[i].length());
            }
        }
        StringBuilder out = new StringBuilder();
        for (String[] line : table) {
            out.append("  ");
            for (int i = 0; i < line.length; i++) {
                out.append(String.format(Locale.ROOT, "%-" + widths[i] + "s ", line[i]));
            }
            out.append('\n');
        }
        return out.toString();
    }
}
