package io.payonce.sandbox;

import java.time.Duration;
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
 * The sandbox's books: one charge per merchant request number, recorded the moment it arrives with the
 * outcome it will have and when (on the database's clock), and the calls per order: those that recorded
 * a charge, plus those counted in sandbox_attempts that recorded none.
 */
@ApplicationScoped
public class SandboxLedger {

    private static final String COUNT_ATTEMPT = """
            INSERT INTO sandbox_attempts (merchant_id, order_no, attempts) VALUES (?, ?, 1)
            ON DUPLICATE KEY UPDATE attempts = attempts + 1""";

    private static final String FIND = "SELECT " + SandboxCharge.COLUMNS
            + " FROM sandbox_charges WHERE merchant_id = ? AND request_no = ?";

    private static final String INSERT = """
            INSERT INTO sandbox_charges (merchant_id, request_no, order_no, amount, currency, status, txn_id, effective_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND))""";

    /** Closes the number unless a charge of it has succeeded: a pending or declined one never will now. */
    private static final String CLOSE = """
            UPDATE sandbox_charges SET status = 'CLOSED'
            WHERE merchant_id = ? AND request_no = ? AND status <> 'CLOSED'
              AND NOT (status = 'SUCCEEDED' AND effective_at <= UTC_TIMESTAMP(3))""";

    /** A close of a number that never arrived fences it off: a later charge of it finds this row. */
    private static final String FENCE = """
            INSERT INTO sandbox_charges (merchant_id, request_no, status, effective_at)
            VALUES (?, ?, 'CLOSED', UTC_TIMESTAMP(3))""";

    /**
     * Every call that recorded a charge is one attempt; the others are counted apart. A charge counts once
     * it has succeeded: one still pending has not taken the money yet.
     */
    private static final String LEDGER = """
            SELECT (SELECT COUNT(*) FROM sandbox_charges
                    WHERE merchant_id = ? AND order_no = ? AND status = 'SUCCEEDED' AND effective_at <= UTC_TIMESTAMP(3)) AS charges,
                   (SELECT COUNT(*) FROM sandbox_charges WHERE merchant_id = ? AND order_no = ?)
                   + (SELECT COALESCE(MAX(attempts), 0) FROM sandbox_attempts
                      WHERE merchant_id = ? AND order_no = ?) AS attempts""";

    private final Pool pool;
    private final Database db;

    SandboxLedger(Pool pool, Database db) {
        this.pool = pool;
        this.db = db;
    }

    public record OrderLedger(String orderNo, long charges, long attempts) {
    }

    /** Counts a call that recorded no charge (refused, or a repeat of a recorded one). */
    public Uni<Void> countAttempt(String merchantId, String orderNo) {
        return db.bounded(pool.preparedQuery(COUNT_ATTEMPT).execute(Tuple.of(merchantId, orderNo))).replaceWithVoid();
    }

    public Uni<Optional<SandboxCharge>> find(String merchantId, String requestNo) {
        return db.bounded(pool.preparedQuery(FIND).execute(Tuple.of(merchantId, requestNo))).map(rows -> {
            var it = rows.iterator();
            return it.hasNext() ? Optional.of(SandboxCharge.from(it.next())) : Optional.empty();
        });
    }

    /**
     * Records a charge that takes effect {@code latencyMs} from now, which counts as its call's attempt:
     * one statement, one commit per charge. Answers false when the request number is recorded already (a
     * concurrent call with the same number, or a fence): the caller answers from that record instead.
     */
    public Uni<Boolean> record(String merchantId, String requestNo, String orderNo, long amount, String currency,
            String status, String txnId, long latencyMs) {
        return db.bounded(pool.preparedQuery(INSERT)
                .execute(Tuple.from(new Object[] { merchantId, requestNo, orderNo, amount, currency, status, txnId,
                        UtcTime.micros(Duration.ofMillis(latencyMs)) })))
                .replaceWith(true)
                .onFailure(MysqlErrors::isDuplicateKey).recoverWithItem(false);
    }

    /**
     * Closes the request number and answers its record afterwards: CLOSED, or the charge that had already
     * succeeded and so could not be closed.
     */
    public Uni<SandboxCharge> close(String merchantId, String requestNo) {
        return db.bounded(pool.preparedQuery(CLOSE).execute(Tuple.of(merchantId, requestNo)))
                .flatMap(closed -> find(merchantId, requestNo))
                .flatMap(found -> found.isPresent() ? Uni.createFrom().item(found.get())
                        // nothing arrived: fence the number; a charge arriving meanwhile wins the key and is closed again
                        : db.bounded(pool.preparedQuery(FENCE).execute(Tuple.of(merchantId, requestNo))).replaceWith(true)
                                .onFailure(MysqlErrors::isDuplicateKey).recoverWithItem(false)
                                .flatMap(fenced -> fenced ? find(merchantId, requestNo).map(Optional::orElseThrow)
                                        : close(merchantId, requestNo)));
    }

    public Uni<OrderLedger> ledger(String merchantId, String orderNo) {
        return db.bounded(pool.preparedQuery(LEDGER).execute(Tuple.from(new Object[] { merchantId, orderNo, merchantId,
                orderNo, merchantId, orderNo }))).map(rows -> {
            Row row = rows.iterator().next();
            return new OrderLedger(orderNo, row.getLong("charges"), row.getLong("attempts"));
        });
    }
}
