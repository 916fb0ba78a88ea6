package io.payonce.redis;

import java.util.Optional;

import io.payonce.idempotency.IdempotencyKeyReusedException;
import io.payonce.idempotency.StoredResponse;

/**
 * A token's final answer as cached in Redis and published to waiters: a copy of what MySQL stored,
 * with the fingerprint it is bound to. A published {@link #WAKE_UP} carries no answer, only "look again".
 */
public record CachedResult(String fingerprint, int status, String body) {

    private static final String SEPARATOR = "|";
    /** The payload of a notice that tells waiters to look at the row again. */
    static final String WAKE_UP = "-";

    /**
     * The answer to replay to a copy with this fingerprint; a copy whose request differs from the one
     * the token is bound to is refused ({@link IdempotencyKeyReusedException}).
     */
    public StoredResponse responseFor(String requestFingerprint) {
        if (!requestFingerprint.equals(fingerprint)) {
            throw new IdempotencyKeyReusedException();
        }
        return new StoredResponse(status, body);
    }

    /**
     * {@code status|fingerprint|body}: read with two index lookups on every replay, where JSON binding
     * would cost as much as the rest of the replay.
     */
    String encode() {
        return status + SEPARATOR + fingerprint + SEPARATOR + body;
    }

    /** The answer a payload holds; empty for a wake-up, a missing key or anything else. */
    static Optional<CachedResult> decode(String payload) {
        if (payload == null || payload.equals(WAKE_UP)) {
            return Optional.empty();
        }
        int first = payload.indexOf(SEPARATOR);
        int second = first < 0 ? -1 : payload.indexOf(SEPARATOR, first + 1);
        if (second < 0) {
            return Optional.empty();
        }
        try {
            return Optional.of(new CachedResult(payload.substring(first + 1, second),
                    Integer.parseInt(payload.substring(0, first)), payload.substring(second + 1)));
        } catch (NumberFormatException notAResult) {
            return Optional.empty();
        }
    }
}
