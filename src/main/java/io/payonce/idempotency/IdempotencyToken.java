package io.payonce.idempotency;

import java.time.Instant;

import io.payonce.database.UtcTime;
import io.vertx.mutiny.sqlclient.Row;

/** A token row as stored. */
public record IdempotencyToken(
        String merchantId,
        String token,
        TokenState state,
        String fingerprint,
        String requestNo,
        Instant leaseUntil,
        StoredResponse response,
        Instant expiresAt) {

    static final String COLUMNS =
            "merchant_id, token, state, fingerprint, request_no, lease_until, response_status, response_body, expires_at";

    static IdempotencyToken from(Row row) {
        Integer status = row.getInteger("response_status");
        return new IdempotencyToken(
                row.getString("merchant_id"),
                row.getString("token"),
                TokenState.valueOf(row.getString("state")),
                row.getString("fingerprint"),
                row.getString("request_no"),
                UtcTime.fromColumn(row.getLocalDateTime("lease_until")),
                status == null ? null : new StoredResponse(status, row.getString("response_body")),
                UtcTime.fromColumn(row.getLocalDateTime("expires_at")));
    }

    public boolean expiredAt(Instant now) {
        return !expiresAt.isAfter(now);
    }

    /** A fingerprint other than the bound one means the key is reused for another request. */
    public boolean boundToOtherThan(String requestFingerprint) {
        return fingerprint != null && !fingerprint.equals(requestFingerprint);
    }
}
