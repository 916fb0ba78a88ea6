package io.payonce.order;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.database.Database;
import io.payonce.database.MysqlErrors;
import io.payonce.database.UtcTime;
import io.smallrye.mutiny.Uni;

/** Creating and reading orders. Payment moves them; see the payment package. */
@ApplicationScoped
public class OrderService {

    private final OrderRepository orders;
    private final Database db;

    OrderService(OrderRepository orders, Database db) {
        this.orders = orders;
        this.db = db;
    }

    /** The order and whether this call created it; a repeat with the same terms returns it unchanged. */
    public record Created(Order order, boolean created) {
    }

    public Uni<Created> create(String merchantId, String orderNo, long amount, String currency) {
        return db.bounded(orders.insert(merchantId, orderNo, amount, currency, UtcTime.now()))
                .replaceWith(true)
                .onFailure(MysqlErrors::isDuplicateKey).recoverWithItem(false)
                .flatMap(created -> db.bounded(orders.find(merchantId, orderNo)).map(found -> {
                    // the insert or the duplicate key says the row exists
                    Order order = found.orElseThrow();
                    if (!created && !order.sameTerms(amount, currency)) {
                        throw new OrderConflictException(orderNo);
                    }
                    return new Created(order, created);
                }));
    }

    public Uni<Order> get(String merchantId, String orderNo) {
        return db.bounded(orders.find(merchantId, orderNo))
                .map(order -> order.orElseThrow(() -> new OrderNotFoundException(orderNo)));
    }
}
