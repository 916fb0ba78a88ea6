package io.payonce.redis;

import io.payonce.idempotency.IdempotencyKeyReusedException;
import io.payonce.idempotency.StoredResponse;

/**
 * A token's final answer as cached in Redis and published to waiters: a copy of what MySQL stored,
 * with the fingerprint it is bound to. A notice with no {@code status} only says "look again".
 */
public record CachedResult(String fingerprint, Integer status, String body) {

    private static final String SEPARATOR = "|";
    private static final String NOTICE = "-";

    static CachedResult wakeUp() {
        return new CachedResult(null, null, null);
    }

    public boolean isAnswer() {
        return status != null;
    }

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
     * {@code status|fingerprint|body}, or {@code -} for a notice: read with two index lookups on every
     * replay, where JSON binding cost as much as the rest of the replay together.
     */
    String encode() {
        return isAnswer() ? status + SEPARATOR + fingerprint + SEPARATOR + body : NOTICE;
    }

    /** The result, a notice, or null when the payload is not one (then Redis counts as empty). */
    static CachedResult decode(String payload) {
        if (payload == null) {
            return null;
        }
        if (payload.equals(NOTICE)) {
            return wakeUp();
        }
        int first = payload.indexOf(SEPARATOR);
        int second = first < 0 ? -1 : payload.indexOf(SEPARATOR, first + 1);
        if (second < 0) {
            return null;
        }
        try {
            return new CachedResult(payload.substring(first + 1, second), Integer.valueOf(payload.substring(0, first)),
                    payload.substring(second + 1));
        } catch (NumberFormatException notAResult) {
            return null;
        }
    }
}
