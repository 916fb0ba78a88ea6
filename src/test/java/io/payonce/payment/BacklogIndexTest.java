package io.payonce.payment;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;

/**
 * The reconciler's search and the backlog gauges read one index and none of the table's rows, so that their
 * cost follows the PROCESSING backlog, never the table: on a table of settled payments with a small backlog,
 * the server's plan for each uses {@code ix_payments_backlog} alone ("Using index"). The benchmark's
 * ten-million-row pass shows the same plans at that size.
 */
@QuarkusTest
class BacklogIndexTest {

    private static final int SETTLED = 3_000;
    private static final int PROCESSING = 20;

    @Inject
    TestDatabase db;

    @Inject
    Pool pool;

    @BeforeEach
    void settledPaymentsAndASmallBacklog() {
        db.clean();
        List<String> rows = new ArrayList<>();
        List<Object> args = new ArrayList<>();
        for (int i = 0; i < SETTLED + PROCESSING; i++) {
            rows.add("('m_backlog', ?, ?, 1999, 'USD', ?, ?, UTC_TIMESTAMP(3) - INTERVAL ? MINUTE, UTC_TIMESTAMP(3))");
            args.addAll(List.of("req-" + i, "ord-" + i, i < SETTLED ? "SUCCEEDED" : "PROCESSING",
                    i % 2 == 0 ? "CHARGE" : "REFUND", i % 600));
        }
        for (int from = 0; from < rows.size(); from += 500) {
            int to = Math.min(from + 500, rows.size());
            db.execute("INSERT INTO payments (merchant_id, request_no, order_no, amount, currency, status, kind,"
                    + " created_at, updated_at) VALUES " + String.join(", ", rows.subList(from, to)),
                    args.subList(from * 5, to * 5).toArray());
        }
        db.execute("ANALYZE TABLE payments");
    }

    @Test
    void reconcilersSearch_andBacklogGauges_readTheIndexAlone() {
        Row search = explain(statement("RECONCILABLE"), "PROCESSING", 60_000_000L, 100);
        Row gauges = explain(statement("BACKLOG"), 3_600_000_000L, "PROCESSING");

        assertAll(
                () -> assertEquals("ix_payments_backlog", search.getString("key"), search.toJson().encode()),
                () -> assertTrue(extras(search).contains("Using index"), search.toJson().encode()),
                () -> assertEquals("ix_payments_backlog", gauges.getString("key"), gauges.toJson().encode()),
                () -> assertTrue(extras(gauges).contains("Using index"), gauges.toJson().encode()));
    }

    /** The plan's one row (each statement reads one table). */
    private Row explain(String sql, Object... args) {
        var plan = pool.preparedQuery("EXPLAIN " + sql).execute(Tuple.from(args)).await().indefinitely();
        assertEquals(1, plan.size(), "one table read");
        return plan.iterator().next();
    }

    /** "Using index" exactly: not "Using index condition", which reads the rows the index points at. */
    private static List<String> extras(Row plan) {
        String extra = plan.getString("Extra");
        return extra == null ? Collections.emptyList() : Arrays.asList(extra.split(";\\s*"));
    }

    private static String statement(String name) {
        try {
            Field field = PaymentRepository.class.getDeclaredField(name);
            field.setAccessible(true);
            return (String) field.get(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("PaymentRepository." + name, e);
        }
    }
}
