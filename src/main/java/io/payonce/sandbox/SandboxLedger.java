package io.payonce.sandbox;

import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.database.Database;
import io.payonce.database.MysqlErrors;
import io.payonce.database.UtcTime;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;

/**
 * The sandbox's books: one charge per merchant request number and one refund per merchant refund number, each
 * recorded the moment it arrives with the outcome it will have and when (on the database's clock), and the calls
 * per order and operation: those that recorded an entry, plus those counted in sandbox_attempts that recorded none.
 */
@ApplicationScoped
public class SandboxLedger {

    private static final String COUNT_ATTEMPT = """
            INSERT INTO sandbox_attempts (merchant_id, order_no, kind, attempts) VALUES (?, ?, ?, 1)
            ON DUPLICATE KEY UPDATE attempts = attempts + 1""";

    private static final String FIND = "SELECT " + SandboxEntry.COLUMNS
            + " FROM sandbox_charges WHERE merchant_id = ? AND request_no = ? AND kind = ?";

    private static final String INSERT = """
            INSERT INTO sandbox_charges (merchant_id, kind, request_no, order_no, amount, currency, status, txn_id, effective_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND))""";

    /** Closes the number unless an entry of it has succeeded: a pending or declined one never will now. */
    private static final String CLOSE = """
            UPDATE sandbox_charges SET status = 'CLOSED'
            WHERE merchant_id = ? AND request_no = ? AND kind = ? AND status <> 'CLOSED'
              AND NOT (status = 'SUCCEEDED' AND effective_at <= UTC_TIMESTAMP(3))""";

    /** A close of a number that never arrived fences it off: a later call with it finds this row. */
    private static final String FENCE = """
            INSERT INTO sandbox_charges (merchant_id, kind, request_no, status, effective_at)
            VALUES (?, ?, ?, 'CLOSED', UTC_TIMESTAMP(3))""";

    /**
     * Per operation: the entries that have succeeded (one still pending has not moved the money yet) and their
     * total, and the calls: every call that recorded an entry is one, the others are counted apart.
     */
    private static final String LEDGER = """
            SELECT kind, SUM(taken) AS taken, SUM(taken_amount) AS taken_amount, SUM(calls) AS calls
            FROM (SELECT kind,
                         CASE WHEN status = 'SUCCEEDED' AND effective_at <= UTC_TIMESTAMP(3) THEN 1 ELSE 0 END AS taken,
                         CASE WHEN status = 'SUCCEEDED' AND effective_at <= UTC_TIMESTAMP(3) THEN amount ELSE 0 END
                           AS taken_amount,
                         1 AS calls
                  FROM sandbox_charges WHERE merchant_id = ? AND order_no = ?
                  UNION ALL
                  SELECT kind, 0, 0, attempts FROM sandbox_attempts WHERE merchant_id = ? AND order_no = ?) AS entries
            GROUP BY kind""";

    private final Pool pool;
    private final Database db;

    SandboxLedger(Pool pool, Database db) {
        this.pool = pool;
        this.db = db;
    }

    /**
     * What the sandbox holds for one order: distinct successful charges and charge calls, distinct successful
     * refunds with their total and refund calls.
     */
    public record OrderLedger(String orderNo, long charges, long attempts, long refunds, long refundedAmount,
            long refundAttempts) {
    }

    /** One operation's share of an order's ledger. */
    private record Tally(long taken, long takenAmount, long calls) {
        static final Tally NONE = new Tally(0, 0, 0);
    }

    /** Counts a call that recorded no entry (refused, or a repeat of a recorded one). */
    public Uni<Void> countAttempt(SandboxOperation operation, String merchantId, String orderNo) {
        return db.bounded(pool.preparedQuery(COUNT_ATTEMPT).execute(Tuple.of(merchantId, orderNo, operation.column())))
                .replaceWithVoid();
    }

    public Uni<Optional<SandboxEntry>> find(SandboxOperation operation, String merchantId, String number) {
        return db.bounded(pool.preparedQuery(FIND).execute(Tuple.of(merchantId, number, operation.column())))
                .map(rows -> {
                    var it = rows.iterator();
                    return it.hasNext() ? Optional.of(SandboxEntry.from(it.next())) : Optional.empty();
                });
    }

    /**
     * Records an entry that takes effect {@code latencyMs} from now, which counts as its call's attempt: one
     * statement, one commit per entry. Answers false when the number is recorded already (a concurrent call with
     * the same number, or a fence): the caller answers from that record instead.
     */
    public Uni<Boolean> record(SandboxOperation operation, String merchantId, String number, String orderNo,
            long amount, String currency, String status, String id, long latencyMs) {
        return db.bounded(pool.preparedQuery(INSERT)
                .execute(Tuple.from(new Object[] { merchantId, operation.column(), number, orderNo, amount, currency,
                        status, id, UtcTime.micros(Duration.ofMillis(latencyMs)) })))
                .replaceWith(true)
                .onFailure(MysqlErrors::isDuplicateKey).recoverWithItem(false);
    }

    /**
     * Closes the number and answers its record afterwards: CLOSED, or the entry that had already succeeded and so
     * could not be closed.
     */
    public Uni<SandboxEntry> close(SandboxOperation operation, String merchantId, String number) {
        return db.bounded(pool.preparedQuery(CLOSE).execute(Tuple.of(merchantId, number, operation.column())))
                .flatMap(closed -> find(operation, merchantId, number))
                .flatMap(found -> found.isPresent() ? Uni.createFrom().item(found.get())
                        // nothing arrived: fence the number; a call arriving meanwhile wins the key and is closed again
                        : db.bounded(pool.preparedQuery(FENCE).execute(Tuple.of(merchantId, operation.column(),
                                number))).replaceWith(true)
                                .onFailure(MysqlErrors::isDuplicateKey).recoverWithItem(false)
                                .flatMap(fenced -> fenced
                                        ? find(operation, merchantId, number).map(Optional::orElseThrow)
                                        : close(operation, merchantId, number)));
    }

    /**
     * A SUM, which the server computes as a DECIMAL and never overflows, as a long; fails rather than wrap round
     * when it does not fit, as refunds sent to the sandbox directly (it caps none at the charge) can add up to.
     */
    private static long exactLong(Row row, String column) {
        return row.getNumeric(column).bigDecimalValue().longValueExact();
    }

    public Uni<OrderLedger> ledger(String merchantId, String orderNo) {
        return db.bounded(pool.preparedQuery(LEDGER).execute(Tuple.of(merchantId, orderNo, merchantId, orderNo)))
                .map(rows -> {
                    Map<SandboxOperation, Tally> tallies = new EnumMap<>(SandboxOperation.class);
                    for (Row row : rows) {
                        tallies.put(SandboxOperation.valueOf(row.getString("kind")), new Tally(row.getLong("taken"),
                                exactLong(row, "taken_amount"), row.getLong("calls")));
                    }
                    Tally charges = tallies.getOrDefault(SandboxOperation.CHARGE, Tally.NONE);
                    Tally refunds = tallies.getOrDefault(SandboxOperation.REFUND, Tally.NONE);
                    return new OrderLedger(orderNo, charges.taken(), charges.calls(), refunds.taken(),
                            refunds.takenAmount(), refunds.calls());
                });
    }
}
