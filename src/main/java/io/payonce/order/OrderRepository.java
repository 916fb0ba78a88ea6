package io.payonce.order;

import java.time.Instant;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.database.UtcTime;
import io.payonce.state.StateMachine.Transition;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.RowSet;
import io.vertx.mutiny.sqlclient.SqlClient;
import io.vertx.mutiny.sqlclient.Tuple;

/** SQL for orders. Every state change names the status and version it expects. */
@ApplicationScoped
public class OrderRepository {

    private static final String INSERT = """
            INSERT INTO orders (merchant_id, order_no, amount, currency, status, version, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, 0, ?, ?)""";

    private static final String FIND = "SELECT " + Order.COLUMNS + " FROM orders WHERE merchant_id = ? AND order_no = ?";

    private static final String TRANSITION = """
            UPDATE orders SET status = ?, version = version + 1, updated_at = ?
            WHERE id = ? AND status = ? AND version = ?""";

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

    private static Uni<Optional<Order>> find(SqlClient client, String sql, String merchantId, String orderNo) {
        return client.preparedQuery(sql).execute(Tuple.of(merchantId, orderNo)).map(OrderRepository::first);
    }

    private static Optional<Order> first(RowSet<Row> rows) {
        var it = rows.iterator();
        return it.hasNext() ? Optional.of(Order.from(it.next())) : Optional.empty();
    }
}
