package io.payonce.idempotency;

import java.util.Optional;

/**
 * A token's answer as the fast path caches it and publishes it to waiters: a copy of what MySQL stored,
 * with the fingerprint it is bound to. A final answer is replayed; an interim one (a 202) only tells a
 * waiter what the first execution answered so far.
 */
record CachedAnswer(String fingerprint, StoredResponse response) {

    private static final String SEPARATOR = "|";

    /** What the owner answered: final, except the 202 of an outcome still unknown. */
    static boolean isFinal(StoredResponse response) {
        return response.status() != 202;
    }

    boolean isFinal() {
        return isFinal(response);
    }

    /**
     * The answer to replay to a copy with this fingerprint; a copy whose request differs from the one the
     * token is bound to is refused ({@link IdempotencyKeyReusedException}).
     */
    StoredResponse responseFor(String requestFingerprint) {
        if (!requestFingerprint.equals(fingerprint)) {
            throw new IdempotencyKeyReusedException();
        }
        return response;
    }

    /**
     * {@code status|fingerprint|body}: read with two index lookups on every replay, where JSON binding would
     * cost as much as the rest of the replay.
     */
    String encode() {
        return response.status() + SEPARATOR + fingerprint + SEPARATOR + response.body();
    }

    /** The answer a payload holds; empty for a missing key, a bare wake-up or anything else. */
    static Optional<CachedAnswer> decode(Optional<String> payload) {
        if (payload.isEmpty()) {
            return Optional.empty();
        }
        String text = payload.get();
        int first = text.indexOf(SEPARATOR);
        int second = first < 0 ? -1 : text.indexOf(SEPARATOR, first + 1);
        if (second < 0) {
            return Optional.empty();
        }
        try {
            return Optional.of(new CachedAnswer(text.substring(first + 1, second),
                    new StoredResponse(Integer.parseInt(text.substring(0, first)), text.substring(second + 1))));
        } catch (NumberFormatException notAnAnswer) {
            return Optional.empty();
        }
    }
}
