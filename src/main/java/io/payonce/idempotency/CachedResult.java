package io.payonce.idempotency;

/**
 * A token's final answer as cached in Redis and published to waiters: a copy of what MySQL stored,
 * with the fingerprint it is bound to. A notice with no {@code status} only says "look again".
 */
public record CachedResult(String fingerprint, Integer status, String body) {

    static CachedResult wakeUp() {
        return new CachedResult(null, null, null);
    }

    public boolean isAnswer() {
        return status != null;
    }

    public StoredResponse response() {
        return new StoredResponse(status, body);
    }
}
