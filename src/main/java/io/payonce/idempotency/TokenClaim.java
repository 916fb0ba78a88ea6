package io.payonce.idempotency;

import java.time.Instant;

/**
 * One copy's claim on a checked token: the fingerprint the claim binds, and when the token expires (what
 * is cached of it must not outlive that). {@code firstClaim} says how to make it: insert the token's row
 * (the common case), or take back a row that exists and was released.
 */
public record TokenClaim(String token, String fingerprint, String requestNo, Instant expiresAt, boolean firstClaim) {

    /** The same claim, made on the row that turned out to exist. */
    public TokenClaim onExistingRow() {
        return new TokenClaim(token, fingerprint, requestNo, expiresAt, false);
    }
}
