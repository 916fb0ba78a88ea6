package io.payonce.idempotency;

import java.time.Instant;
import java.util.Optional;

/**
 * What a token's row means to a copy of a request that did not claim it. {@link #of} is the one reading
 * of a row: the claim path and the waiters both call it.
 */
public sealed interface TokenFinding {

    /** The first execution finished; its answer is replayed. */
    record Finished(StoredResponse response) implements TokenFinding {
    }

    /**
     * A copy, on this instance or another, is executing it; {@code interim} is the 202 its owner stored
     * when the channel's outcome was unknown, or null before it gave one.
     */
    record Running(StoredResponse interim) implements TokenFinding {
    }

    /** Nobody holds it (released, or its first claim rolled back): this copy may claim it. */
    record Vacant() implements TokenFinding {
    }

    /**
     * The meaning of a token's row, or of its absence, to a request with {@code fingerprint} at
     * {@code now}. Fails with {@link InvalidIdempotencyTokenException} once the row has expired, and with
     * {@link IdempotencyKeyReusedException} when it is bound to another request.
     */
    static TokenFinding of(Optional<TokenRow> stored, String fingerprint, Instant now) {
        if (stored.isEmpty()) {
            return new Vacant();
        }
        TokenRow row = stored.get();
        if (!row.expiresAt().isAfter(now)) {
            throw new InvalidIdempotencyTokenException();
        }
        if (row.fingerprint() != null && !row.fingerprint().equals(fingerprint)) {
            throw new IdempotencyKeyReusedException();
        }
        return switch (row.status()) {
            case COMPLETED -> new Finished(row.response());
            case IN_PROGRESS -> new Running(row.response());
            case AVAILABLE -> new Vacant();
        };
    }
}
