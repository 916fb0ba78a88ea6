package io.payonce.payment;

import java.time.Instant;

import io.payonce.database.UtcTime;
import io.vertx.mutiny.sqlclient.Row;

/**
 * One movement of money at the channel under one merchant number: a payment attempt ({@link PaymentKind#CHARGE},
 * {@code requestNo} its request number) or a refund ({@link PaymentKind#REFUND}, {@code requestNo} its refund
 * number).
 */
public record Payment(
        long id,
        String merchantId,
        String requestNo,
        String orderNo,
        String token,
        long amount,
        String currency,
        PaymentStatus status,
        PaymentFailure failure,
        String channelTxnId,
        Instant createdAt,
        Instant updatedAt,
        int reconcileAttempts,
        int epoch,
        PaymentKind kind) {

    static final String COLUMNS = "id, merchant_id, request_no, order_no, token, amount, currency, status, failure, "
            + "channel_txn_id, created_at, updated_at, reconcile_attempts, epoch, kind";

    static Payment from(Row row) {
        return new Payment(
                row.getLong("id"),
                row.getString("merchant_id"),
                row.getString("request_no"),
                row.getString("order_no"),
                row.getString("token"),
                row.getLong("amount"),
                row.getString("currency"),
                PaymentStatus.valueOf(row.getString("status")),
                row.getString("failure") == null ? null : PaymentFailure.valueOf(row.getString("failure")),
                row.getString("channel_txn_id"),
                UtcTime.fromColumn(row.getLocalDateTime("created_at")),
                UtcTime.fromColumn(row.getLocalDateTime("updated_at")),
                row.getInteger("reconcile_attempts"),
                row.getInteger("epoch"),
                PaymentKind.valueOf(row.getString("kind")));
    }
}
