package io.payonce.idempotency;

import java.time.Instant;
import java.util.Optional;

import io.payonce.database.UtcTime;
import io.vertx.mutiny.sqlclient.Row;

/** A token's row as stored; {@link TokenFinding#of} says what it means. */
public record TokenRow(
        String merchantId,
        String token,
        TokenStatus status,
        String fingerprint,
        String requestNo,
        Instant leaseUntil,
        StoredResponse response,
        Instant expiresAt,
        int epoch) {

    static final String COLUMNS =
            "merchant_id, token, state, fingerprint, request_no, lease_until, response_status, response_body, expires_at, epoch";

    static TokenRow from(Row row) {
        Integer status = row.getInteger("response_status");
        return new TokenRow(
                row.getString("merchant_id"),
                row.getString("token"),
                TokenStatus.valueOf(row.getString("state")),
                row.getString("fingerprint"),
                row.getString("request_no"),
                UtcTime.fromColumn(row.getLocalDateTime("lease_until")),
                status == null ? null : new StoredResponse(status, row.getString("response_body")),
                UtcTime.fromColumn(row.getLocalDateTime("expires_at")),
                row.getInteger("epoch"));
    }

    /** The answer stored as final (the row is COMPLETED); an in-progress row's interim 202 is not one. */
    public Optional<StoredResponse> finalAnswer() {
        return status == TokenStatus.COMPLETED ? Optional.of(response) : Optional.empty();
    }
}
