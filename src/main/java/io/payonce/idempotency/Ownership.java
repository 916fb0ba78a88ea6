package io.payonce.idempotency;

import java.time.Instant;

/**
 * What a copy holds once its claim on a token committed: the request it bound the token to, and the epoch it
 * claimed it under, which every later write of this owner on the token (and on what it opened) names, so that
 * a write made after someone else took over changes nothing.
 */
public record Ownership(String merchantId, String token, String fingerprint, String requestNo, Instant expiresAt,
        int epoch) {
}
