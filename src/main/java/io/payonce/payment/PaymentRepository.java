package io.payonce.payment;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.database.UtcTime;
import io.payonce.idempotency.StoredResponse;
import io.payonce.idempotency.TokenStatus;
import io.payonce.order.Order;
import io.payonce.order.OrderStatus;
import io.payonce.state.StateMachine.Transition;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.mysqlclient.MySQLClient;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.SqlClient;
import io.vertx.mutiny.sqlclient.Tuple;

/**
 * SQL for payment records. The unique index on (merchant_id, request_no) is layer 2. A statement that
 * names payments by id forces the primary key, so the optimizer cannot pick the (status, updated_at)
 * index instead and lock every PROCESSING payment, and the gap new ones are inserted into.
 */
@ApplicationScoped
public class PaymentRepository {

    /**
     * Its age and its owner's lease are on the database's clock, which every instance shares; its epoch is
     * the one its opener claimed the token under.
     */
    private static final String INSERT = """
            INSERT INTO payments (merchant_id, request_no, order_no, token, amount, currency, status, created_at, updated_at,
                lease_until, epoch, kind)
            VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3),
                DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND), ?, ?)""";

    /** Whether the payment is still PROCESSING under the owner's epoch: an owner asks right before a charge. */
    private static final String HELD = """
            SELECT COUNT(*) AS held FROM payments FORCE INDEX (PRIMARY) WHERE id = ? AND status = ? AND epoch = ?""";

    private static final String FIND = "SELECT " + Payment.COLUMNS
            + " FROM payments WHERE merchant_id = ? AND request_no = ? AND kind = ?";

    private static final String FIND_BY_ORDER = "SELECT " + Payment.COLUMNS + " FROM payments WHERE merchant_id = ? AND order_no = ? ORDER BY id";

    /**
     * A settlement in one statement, so it costs one commit and no crash can leave its parts disagreeing:
     * the PROCESSING payment gets its final status, its order leaves PAYING at the version it was read
     * at (layer 3: no row changes unless both match), and the token, while still in progress, gets its
     * final answer. A token that is not in progress (there is none, or it was settled) is left alone.
     * It moves an order and a token too, yet lives here: only as one statement is it atomic without a
     * transaction. Each of its three moves is taken from its own machine.
     */
    private static final String SETTLE = """
            UPDATE payments p FORCE INDEX (PRIMARY)
            JOIN orders o ON o.id = ?
            LEFT JOIN idempotency_tokens t FORCE INDEX (uq_tokens_merchant_token) ON t.merchant_id = p.merchant_id AND t.token = ? AND t.state = ?
            SET p.status = ?, p.failure = ?, p.channel_txn_id = ?, p.updated_at = ?,
                o.status = ?, o.version = o.version + 1, o.updated_at = ?,
                t.state = ?, t.response_status = ?, t.response_body = ?, t.lease_until = NULL, t.updated_at = ?
            WHERE p.id = ? AND p.status = ? AND o.status = ? AND o.version = ?""";

    /**
     * A refund's settlement, the part on its own record and token (see {@link #SETTLE}): its order's amounts
     * move in the same transaction ({@link io.payonce.order.OrderRepository#refundSettled}). Two statements,
     * not one: the order's new status depends on its refunded amount before this refund, and only a
     * single-table UPDATE evaluates its assignments in a defined order.
     */
    private static final String SETTLE_REFUND = """
            UPDATE payments p FORCE INDEX (PRIMARY)
            LEFT JOIN idempotency_tokens t FORCE INDEX (uq_tokens_merchant_token) ON t.merchant_id = p.merchant_id AND t.token = ? AND t.state = ?
            SET p.status = ?, p.failure = ?, p.channel_txn_id = ?, p.updated_at = ?,
                t.state = ?, t.response_status = ?, t.response_body = ?, t.lease_until = NULL, t.updated_at = ?
            WHERE p.id = ? AND p.status = ? AND p.kind = ?""";

    /** The settled token's move; the payment's and the order's depend on the channel's word. */
    private static final Transition<TokenStatus> TOKEN_SETTLES = TokenStatus.MACHINE.move(TokenStatus.IN_PROGRESS,
            TokenStatus.COMPLETED);

    /**
     * Only a charge the channel never accepted is undone, so nothing that was charged is forgotten, and only
     * by its opener while its epoch holds: after a take-over the charge may have been sent again.
     */
    private static final String DELETE_UNACCEPTED = """
            DELETE p FROM payments p FORCE INDEX (PRIMARY) WHERE p.id = ? AND p.status = ? AND p.epoch = ?""";

    /**
     * The interim 202 of an unknown channel outcome, recorded with the payment's token while it stays in
     * progress, and only while the payment is still PROCESSING under the owner's epoch.
     */
    private static final String RECORD_INTERIM = """
            UPDATE idempotency_tokens t FORCE INDEX (uq_tokens_merchant_token)
            JOIN payments p FORCE INDEX (PRIMARY) ON p.id = ?
            SET t.response_status = ?, t.response_body = ?, t.updated_at = ?
            WHERE t.merchant_id = p.merchant_id AND t.token = p.token AND t.state = ? AND t.epoch = ?
              AND p.status = ? AND p.epoch = ?""";

    /**
     * PROCESSING payments old enough to reconcile, whose owner's lease has ended and that no reconciler
     * holds: read without a lock, then claimed. Ages and leases are compared on the database's clock.
     */
    private static final String RECONCILABLE = """
            SELECT id FROM payments
            WHERE status = ? AND created_at < DATE_SUB(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND)
              AND (lease_until IS NULL OR lease_until <= UTC_TIMESTAMP(3))
              AND (reconcile_after IS NULL OR reconcile_after <= UTC_TIMESTAMP(3))
            ORDER BY id LIMIT ?""";

    /**
     * Takes the payments named by primary key over for one reconciler run, as a lease, so reconcilers on
     * several instances never work on one payment at once, and under the next epoch, so that whoever held
     * a payment before (its opener, or an earlier run) can change nothing of it any more. Locking by primary key only, in key order,
     * a claim takes its locks in the order a settlement does (payment row first), so the two cannot
     * deadlock; a payment another reconciler leased meanwhile no longer matches.
     */
    private static final String CLAIM_FOR_RECONCILE = """
            UPDATE payments FORCE INDEX (PRIMARY)
            SET reconcile_after = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND), reconcile_claim = ?, epoch = epoch + 1
            WHERE id IN (%s) AND status = ? AND (reconcile_after IS NULL OR reconcile_after <= UTC_TIMESTAMP(3))""";

    /** The claimed payments, each with whether it is past the age at which reconciliation gives up. */
    private static final String CLAIMED = "SELECT " + Payment.COLUMNS
            + ", created_at <= DATE_SUB(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND) AS overdue"
            + " FROM payments WHERE id IN (%s) AND reconcile_claim = ? AND status = ?";

    /** The channel still cannot tell: try again after the backoff, unless someone took the payment over since. */
    private static final String POSTPONE = """
            UPDATE payments FORCE INDEX (PRIMARY)
            SET reconcile_after = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND), reconcile_attempts = reconcile_attempts + 1,
                reconcile_claim = NULL
            WHERE id = ? AND status = ? AND epoch = ?""";

    /**
     * The PROCESSING records of each kind: how many, how many older than a horizon, and the oldest's age,
     * on the database's clock as reconciliation's ages are. The (status, updated_at) index finds them, and
     * they are few unless something is wrong; a kind with none has no row.
     */
    private static final String BACKLOG = """
            SELECT kind, COUNT(*) AS processing,
                COUNT(CASE WHEN created_at < DATE_SUB(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND) THEN 1 END) AS overdue,
                COALESCE(TIMESTAMPDIFF(MICROSECOND, MIN(created_at), UTC_TIMESTAMP(3)), 0) AS oldest_micros
            FROM payments WHERE status = ? GROUP BY kind""";

    /** Every statement here but the insert and the settlement acts only on a payment not settled yet. */
    private static final String PROCESSING = PaymentStatus.PROCESSING.name();

    private final Pool pool;

    PaymentRepository(Pool pool) {
        this.pool = pool;
    }

    /**
     * Inserts a PROCESSING record, leased to its owner for {@code lease}, and returns its id; a reused
     * request number fails with 1062.
     */
    public Uni<Long> insert(SqlClient tx, PaymentKind kind, String merchantId, String requestNo, String orderNo,
            String token, long amount, String currency, Duration lease, int epoch) {
        return tx.preparedQuery(INSERT)
                .execute(Tuple.from(new Object[] { merchantId, requestNo, orderNo, token, amount, currency,
                        PaymentStatus.MACHINE.initial().name(), UtcTime.micros(lease), epoch, kind.name() }))
                .map(rows -> rows.property(MySQLClient.LAST_INSERTED_ID));
    }

    /** The merchant's payment attempt under {@code requestNo}. */
    public Uni<Optional<Payment>> find(String merchantId, String requestNo) {
        return find(pool, PaymentKind.CHARGE, merchantId, requestNo);
    }

    /** The merchant's record of that kind under {@code number}. */
    public Uni<Optional<Payment>> find(PaymentKind kind, String merchantId, String number) {
        return find(pool, kind, merchantId, number);
    }

    public Uni<Optional<Payment>> find(SqlClient client, PaymentKind kind, String merchantId, String number) {
        return client.preparedQuery(FIND).execute(Tuple.of(merchantId, number, kind.name())).map(rows -> {
            var it = rows.iterator();
            return it.hasNext() ? Optional.of(Payment.from(it.next())) : Optional.empty();
        });
    }

    public Uni<List<Payment>> findByOrder(String merchantId, String orderNo) {
        return pool.preparedQuery(FIND_BY_ORDER).execute(Tuple.of(merchantId, orderNo)).map(rows -> {
            List<Payment> payments = new ArrayList<>();
            for (Row row : rows) {
                payments.add(Payment.from(row));
            }
            return payments;
        });
    }

    /**
     * Settles a PROCESSING payment as {@code status}, its PAYING order as {@code orderStatus} and its
     * in-progress token (see {@link #SETTLE}); false when nothing changed: the payment was settled already
     * or the order moved under it. Fails with {@link IllegalStateException}, before any SQL is sent, when
     * either machine has no such move.
     */
    public Uni<Boolean> settle(long id, PaymentStatus status, PaymentFailure failure, String channelTxnId, Order order,
            OrderStatus orderStatus, String token, StoredResponse response, Instant now) {
        Transition<PaymentStatus> payment = PaymentStatus.MACHINE.move(PaymentStatus.PROCESSING, status);
        Transition<OrderStatus> orderMove = OrderStatus.MACHINE.move(OrderStatus.PAYING, orderStatus);
        Object at = UtcTime.toColumn(now);
        return pool.preparedQuery(SETTLE)
                .execute(Tuple.from(new Object[] { order.id(), token, TOKEN_SETTLES.from().name(),
                        payment.to().name(), failure == null ? null : failure.name(), channelTxnId, at,
                        orderMove.to().name(), at,
                        TOKEN_SETTLES.to().name(), response.status(), response.body(), at,
                        id, payment.from().name(), orderMove.from().name(), order.version() }))
                // payment and order both change, so a settlement changes two rows (three with the token)
                .map(rows -> rows.rowCount() > 0);
    }

    /**
     * Settles a PROCESSING refund's record as {@code status} and its in-progress token (see
     * {@link #SETTLE_REFUND}), in the caller's transaction; false when it was settled already.
     */
    public Uni<Boolean> settleRefund(SqlClient tx, long id, PaymentStatus status, PaymentFailure failure,
            String channelRefundId, String token, StoredResponse response, Instant now) {
        Transition<PaymentStatus> refund = PaymentStatus.MACHINE.move(PaymentStatus.PROCESSING, status);
        Object at = UtcTime.toColumn(now);
        return tx.preparedQuery(SETTLE_REFUND)
                .execute(Tuple.from(new Object[] { token, TOKEN_SETTLES.from().name(),
                        refund.to().name(), failure == null ? null : failure.name(), channelRefundId, at,
                        TOKEN_SETTLES.to().name(), response.status(), response.body(), at,
                        id, refund.from().name(), PaymentKind.REFUND.name() }))
                .map(rows -> rows.rowCount() > 0);
    }

    /** A payment claimed by a reconciler run, and whether it is past the age at which reconciliation gives up. */
    public record Claimed(Payment payment, boolean overdue) {
    }

    /**
     * Claims a batch of payments older than {@code minAge} for reconciliation, each leased to this run for
     * {@code claimLease}, and returns it.
     */
    public Uni<List<Claimed>> claimForReconcile(String claim, Duration minAge, Duration claimLease, Duration giveUpAfter,
            int batch) {
        return pool.preparedQuery(RECONCILABLE).execute(Tuple.of(PROCESSING, UtcTime.micros(minAge), batch))
                .flatMap(found -> {
                    List<Object> ids = new ArrayList<>();
                    found.forEach(row -> ids.add(row.getLong("id")));
                    if (ids.isEmpty()) {
                        return Uni.createFrom().item(List.<Claimed>of());
                    }
                    String marks = String.join(", ", Collections.nCopies(ids.size(), "?"));
                    List<Object> claimArgs = new ArrayList<>(List.of(UtcTime.micros(claimLease), claim));
                    claimArgs.addAll(ids);
                    claimArgs.add(PROCESSING);
                    List<Object> claimedArgs = new ArrayList<>(List.of(UtcTime.micros(giveUpAfter)));
                    claimedArgs.addAll(ids);
                    claimedArgs.add(claim);
                    claimedArgs.add(PROCESSING);
                    return pool.preparedQuery(CLAIM_FOR_RECONCILE.formatted(marks)).execute(Tuple.from(claimArgs))
                            .flatMap(updated -> pool.preparedQuery(CLAIMED.formatted(marks)).execute(Tuple.from(claimedArgs)))
                            .map(rows -> {
                                List<Claimed> claimed = new ArrayList<>();
                                for (Row row : rows) {
                                    claimed.add(new Claimed(Payment.from(row), ((Number) row.getValue("overdue")).intValue() == 1));
                                }
                                return claimed;
                            });
                });
    }

    /** The channel still cannot tell: looked at again after {@code backoff}; false when the epoch was lost. */
    public Uni<Boolean> postpone(long id, int epoch, Duration backoff) {
        return pool.preparedQuery(POSTPONE).execute(Tuple.of(UtcTime.micros(backoff), id, PROCESSING, epoch))
                .map(rows -> rows.rowCount() == 1);
    }

    /** Whether the payment is still PROCESSING under {@code epoch}. */
    public Uni<Boolean> held(long id, int epoch) {
        return pool.preparedQuery(HELD).execute(Tuple.of(id, PROCESSING, epoch))
                .map(rows -> rows.iterator().next().getLong("held") == 1);
    }

    /**
     * Removes a PROCESSING record whose charge the channel refused before accepting it, while its opener's
     * epoch holds; false when it did not (the payment was taken over, or settled).
     */
    public Uni<Boolean> deleteUnaccepted(SqlClient tx, long id, int epoch) {
        return tx.preparedQuery(DELETE_UNACCEPTED).execute(Tuple.of(id, PROCESSING, epoch))
                .map(rows -> rows.rowCount() == 1);
    }

    /** Records the interim answer with the payment's token (see {@link #RECORD_INTERIM}); false when fenced off. */
    public Uni<Boolean> recordInterim(long id, int epoch, int tokenEpoch, StoredResponse response, Instant now) {
        return pool.preparedQuery(RECORD_INTERIM)
                .execute(Tuple.from(new Object[] { id, response.status(), response.body(), UtcTime.toColumn(now),
                        TokenStatus.IN_PROGRESS.name(), tokenEpoch, PROCESSING, epoch }))
                .map(rows -> rows.rowCount() == 1);
    }

    /** PROCESSING records of one kind: all of them, those created more than a horizon ago, the oldest's age. */
    public record Backlog(long processing, long overdue, long oldestMicros) {
        static final Backlog NONE = new Backlog(0, 0, 0);
    }

    /** The backlog of each kind, zeros for a kind with nothing PROCESSING. */
    public Uni<Map<PaymentKind, Backlog>> backlog(Duration horizon) {
        return pool.preparedQuery(BACKLOG).execute(Tuple.of(UtcTime.micros(horizon), PROCESSING)).map(rows -> {
            Map<PaymentKind, Backlog> byKind = new EnumMap<>(PaymentKind.class);
            for (PaymentKind kind : PaymentKind.values()) {
                byKind.put(kind, Backlog.NONE);
            }
            for (Row row : rows) {
                byKind.put(PaymentKind.valueOf(row.getString("kind")), new Backlog(row.getLong("processing"),
                        row.getLong("overdue"), row.getLong("oldest_micros")));
            }
            return byKind;
        });
    }
}
