package io.payonce.order;

import java.time.Instant;

import io.payonce.database.UtcTime;
import io.vertx.mutiny.sqlclient.Row;

/** One merchant order, as stored; {@code refundedAmount} is what refunds that succeeded gave back. */
public record Order(
        long id,
        String merchantId,
        String orderNo,
        long amount,
        String currency,
        OrderStatus status,
        int version,
        Instant createdAt,
        Instant updatedAt,
        long refundedAmount) {

    static final String COLUMNS = "id, merchant_id, order_no, amount, currency, status, version, created_at, updated_at, refunded_amount";

    static Order from(Row row) {
        return new Order(
                row.getLong("id"),
                row.getString("merchant_id"),
                row.getString("order_no"),
                row.getLong("amount"),
                row.getString("currency"),
                OrderStatus.valueOf(row.getString("status")),
                row.getInteger("version"),
                UtcTime.fromColumn(row.getLocalDateTime("created_at")),
                UtcTime.fromColumn(row.getLocalDateTime("updated_at")),
                row.getLong("refunded_amount"));
    }

    /** True when another create request names the same order, so it is answered as a repeat. */
    public boolean sameTerms(long otherAmount, String otherCurrency) {
        return amount == otherAmount && currency.equals(otherCurrency);
    }

    /** The order as a successful transition to {@code next} leaves it (one version further). */
    public Order movedTo(OrderStatus next, Instant now) {
        return new Order(id, merchantId, orderNo, amount, currency, next, version + 1, createdAt, now, refundedAmount);
    }
}
