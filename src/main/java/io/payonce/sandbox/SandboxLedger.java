package io.payonce.sandbox;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.mysql.MysqlErrors;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;

/**
 * The sandbox's books: one charge per merchant request number, and the calls per order: those that
 * recorded a charge, plus those counted in sandbox_attempts that recorded none.
 */
@ApplicationScoped
public class SandboxLedger {

    private static final String COUNT_ATTEMPT = """
            INSERT INTO sandbox_attempts (merchant_id, order_no, attempts) VALUES (?, ?, 1)
            ON DUPLICATE KEY UPDATE attempts = attempts + 1""";

    private static final String FIND = "SELECT " + SandboxCharge.COLUMNS + " FROM sandbox_charges WHERE merchant_id = ? AND request_no = ?";

    private static final String INSERT = """
            INSERT INTO sandbox_charges (merchant_id, request_no, order_no, amount, currency, status, txn_id)
            VALUES (?, ?, ?, ?, ?, ?, ?)""";

    /** Every call that recorded a charge (succeeded or declined) is one attempt; the others are counted apart. */
    private static final String LEDGER = """
            SELECT (SELECT COUNT(*) FROM sandbox_charges
                    WHERE merchant_id = ? AND order_no = ? AND status = 'SUCCEEDED') AS charges,
                   (SELECT COUNT(*) FROM sandbox_charges WHERE merchant_id = ? AND order_no = ?)
                   + (SELECT COALESCE(MAX(attempts), 0) FROM sandbox_attempts
                      WHERE merchant_id = ? AND order_no = ?) AS attempts""";

    private final Pool pool;

    SandboxLedger(Pool pool) {
        this.pool = pool;
    }

    public record OrderLedger(String orderNo, long charges, long attempts) {
    }

    /** Counts a call that recorded no charge (refused, or a repeat of a recorded one). */
    public Uni<Void> countAttempt(String merchantId, String orderNo) {
        return pool.preparedQuery(COUNT_ATTEMPT).execute(Tuple.of(merchantId, orderNo)).replaceWithVoid();
    }

    public Uni<SandboxCharge> find(String merchantId, String requestNo) {
        return pool.preparedQuery(FIND).execute(Tuple.of(merchantId, requestNo)).map(rows -> {
            var it = rows.iterator();
            return it.hasNext() ? SandboxCharge.from(it.next()) : null;
        });
    }

    /**
     * Records a charge, which counts as its call's attempt: one statement, one commit per charge. When
     * the request number was charged already (a concurrent call with the same number), counts the call
     * as an attempt of its own and answers the first record.
     */
    public Uni<SandboxCharge> record(String merchantId, SandboxCharge charge) {
        return pool.preparedQuery(INSERT)
                .execute(Tuple.from(new Object[] { merchantId, charge.requestNo(), charge.orderNo(), charge.amount(),
                        charge.currency(), charge.status(), charge.txnId() }))
                .replaceWith(charge)
                .onFailure(MysqlErrors::isDuplicateKey).recoverWithUni(dup -> countAttempt(merchantId, charge.orderNo())
                        .flatMap(counted -> find(merchantId, charge.requestNo())));
    }

    public Uni<OrderLedger> ledger(String merchantId, String orderNo) {
        return pool.preparedQuery(LEDGER).execute(Tuple.from(new Object[] { merchantId, orderNo, merchantId, orderNo,
                merchantId, orderNo })).map(rows -> {
            Row row = rows.iterator().next();
            return new OrderLedger(orderNo, row.getLong("charges"), row.getLong("attempts"));
        });
    }
}
