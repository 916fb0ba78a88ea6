package io.payonce.order;

import java.time.Instant;
import java.util.Optional;
import java.util.stream.Stream;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.database.UtcTime;
import io.payonce.state.StateMachine.Transition;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.RowSet;
import io.vertx.mutiny.sqlclient.SqlClient;
import io.vertx.mutiny.sqlclient.Tuple;

/**
 * SQL for orders. Every state change names the status and version it expects.
 *
 * <p>Amounts are BIGINT, where a sum past 2^63 - 1 is an error (1690), not a refusal. Invariant, held by the
 * refund statements: {@code 0 <= refunded_amount}, {@code 0 <= reserved_amount},
 * {@code refunded_amount + reserved_amount <= amount}. So a condition compares a refund's amount (above 0, any
 * BIGINT) with a difference of those columns, which stays within 0 and {@code amount}, and never with a sum;
 * and a sum is assigned only on a row whose condition bounds it by {@code amount}. No amount a client sends
 * makes a statement fail instead of answer.
 */
@ApplicationScoped
public class OrderRepository {

    private static final String INSERT = """
            INSERT INTO orders (merchant_id, order_no, amount, currency, status, version, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, 0, ?, ?)""";

    private static final String FIND = "SELECT " + Order.COLUMNS + " FROM orders WHERE merchant_id = ? AND order_no = ?";

    private static final String TRANSITION = """
            UPDATE orders SET status = ?, version = version + 1, updated_at = ?
            WHERE id = ? AND status = ? AND version = ?""";

    /**
     * Reserves a refund's amount on a refundable order, bounded in SQL so that what refunds that succeeded
     * gave back plus what refunds in flight may give back never exceeds what was paid. It names no version:
     * concurrent refunds that fit all pass, and only the amount refuses one.
     */
    private static final String RESERVE = """
            UPDATE orders SET reserved_amount = reserved_amount + ?
            WHERE id = ? AND status IN (?, ?) AND ? <= amount - refunded_amount - reserved_amount""";

    /** A refund the channel's word says did not happen gives its reservation back. */
    private static final String RELEASE = """
            UPDATE orders SET reserved_amount = reserved_amount - ?
            WHERE merchant_id = ? AND order_no = ? AND reserved_amount >= ?""";

    /**
     * A refund that succeeded moves its reservation to the refunded amount and the order forward, to REFUNDED
     * once nothing is left to refund. Assignments run left to right (or all on the old values, under MariaDB's
     * SIMULTANEOUS_ASSIGNMENT): either way the status is decided on the refunded amount before this refund.
     */
    private static final String REFUND_SUCCEEDED = """
            UPDATE orders SET status = CASE WHEN ? >= amount - refunded_amount THEN ? ELSE ? END,
                refunded_amount = refunded_amount + ?, reserved_amount = reserved_amount - ?,
                version = version + 1, updated_at = ?
            WHERE merchant_id = ? AND order_no = ? AND status IN (?, ?) AND reserved_amount >= ?""";

    /**
     * The states a refund moves an order from, as the statements bind them: each move it makes from them
     * (to PARTIALLY_REFUNDED or REFUNDED) is checked against the machine when the class loads.
     */
    private static final String[] REFUNDABLE = OrderStatus.REFUNDABLE.stream()
            .peek(from -> Stream.of(OrderStatus.REFUNDED, OrderStatus.PARTIALLY_REFUNDED)
                    .forEach(to -> OrderStatus.MACHINE.move(from, to)))
            .map(OrderStatus::name).toArray(String[]::new);

    private final Pool pool;

    OrderRepository(Pool pool) {
        this.pool = pool;
    }

    /** Inserts a PENDING order; fails with a duplicate-key error when the order number exists. */
    public Uni<Void> insert(String merchantId, String orderNo, long amount, String currency, Instant now) {
        return pool.preparedQuery(INSERT)
                .execute(Tuple.from(new Object[] { merchantId, orderNo, amount, currency,
                        OrderStatus.MACHINE.initial().name(), UtcTime.toColumn(now), UtcTime.toColumn(now) }))
                .replaceWithVoid();
    }

    public Uni<Optional<Order>> find(String merchantId, String orderNo) {
        return find(pool, FIND, merchantId, orderNo);
    }

    public Uni<Optional<Order>> find(SqlClient client, String merchantId, String orderNo) {
        return find(client, FIND, merchantId, orderNo);
    }

    /**
     * Moves the order from {@code from} at {@code version} to {@code to}. Answers false when the order
     * was not in that state at that version any more: someone else moved it first. Fails with
     * {@link IllegalStateException}, before any SQL is sent, when {@link OrderStatus#MACHINE} has no such move.
     */
    public Uni<Boolean> transition(SqlClient client, Order order, OrderStatus from, OrderStatus to, Instant now) {
        Transition<OrderStatus> move = OrderStatus.MACHINE.move(from, to);
        return client.preparedQuery(TRANSITION)
                .execute(Tuple.of(move.to().name(), UtcTime.toColumn(now), order.id(), move.from().name(), order.version()))
                .map(rows -> rows.rowCount() == 1);
    }

    /**
     * Reserves {@code amount} for a refund in flight (see {@link #RESERVE}); false when the order is not
     * refundable or the amount does not fit.
     */
    public Uni<Boolean> reserve(SqlClient tx, Order order, long amount) {
        return tx.preparedQuery(RESERVE)
                .execute(Tuple.of(amount, order.id(), REFUNDABLE[0], REFUNDABLE[1], amount))
                .map(rows -> rows.rowCount() == 1);
    }

    /** Gives back a refund's reservation; false when there was none that large (never, while the books hold). */
    public Uni<Boolean> release(SqlClient tx, String merchantId, String orderNo, long amount) {
        return tx.preparedQuery(RELEASE).execute(Tuple.of(amount, merchantId, orderNo, amount))
                .map(rows -> rows.rowCount() == 1);
    }

    /**
     * Books a refund that succeeded (see {@link #REFUND_SUCCEEDED}); false when the order had no such
     * reservation or was not refundable (never, while the books hold).
     */
    public Uni<Boolean> refundSucceeded(SqlClient tx, String merchantId, String orderNo, long amount, Instant now) {
        return tx.preparedQuery(REFUND_SUCCEEDED)
                .execute(Tuple.from(new Object[] { amount, OrderStatus.REFUNDED.name(),
                        OrderStatus.PARTIALLY_REFUNDED.name(), amount, amount, UtcTime.toColumn(now), merchantId,
                        orderNo, REFUNDABLE[0], REFUNDABLE[1], amount }))
                .map(rows -> rows.rowCount() == 1);
    }

    private static Uni<Optional<Order>> find(SqlClient client, String sql, String merchantId, String orderNo) {
        return client.preparedQuery(sql).execute(Tuple.of(merchantId, orderNo)).map(OrderRepository::first);
    }

    private static Optional<Order> first(RowSet<Row> rows) {
        var it = rows.iterator();
        return it.hasNext() ? Optional.of(Order.from(it.next())) : Optional.empty();
    }
}
