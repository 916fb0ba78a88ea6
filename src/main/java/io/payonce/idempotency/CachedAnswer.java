package io.payonce.idempotency;

import java.util.Optional;

/**
 * A token's answer as the fast path caches it and publishes it to waiters: a copy of what MySQL stored,
 * with the fingerprint it is bound to and, when the first execution was read from a request body, the
 * digest of that body's bytes ({@link Fingerprint#ofBody}; null otherwise). A final answer is replayed; an
 * interim one (a 202) only tells a waiter what the first execution answered so far.
 */
record CachedAnswer(String fingerprint, StoredResponse response, String bodyDigest) {

    private static final String SEPARATOR = "|";
    /** Between the status and the body digest, in the first field: see {@link #encode}. */
    private static final char DIGEST_MARK = ';';

    CachedAnswer(String fingerprint, StoredResponse response) {
        this(fingerprint, response, null);
    }

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
     * True when a copy's body is byte for byte the one the first execution was read from; its digest is taken
     * only when there is one to compare it with.
     */
    boolean sameBody(byte[] copyBody) {
        return bodyDigest != null && bodyDigest.equals(Fingerprint.ofBody(copyBody));
    }

    /**
     * {@code status|fingerprint|body}, or {@code status;digest|fingerprint|body} with a body digest: read with
     * two index lookups on every replay, where JSON binding would cost as much as the rest of the replay. A
     * reader that knows no digest finds no number in the first field and takes the payload for no answer at
     * all (it then asks MySQL), never for another answer.
     */
    String encode() {
        String status = bodyDigest == null ? Integer.toString(response.status())
                : response.status() + String.valueOf(DIGEST_MARK) + bodyDigest;
        return status + SEPARATOR + fingerprint + SEPARATOR + response.body();
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
        int mark = text.indexOf(DIGEST_MARK, 0, first);
        try {
            int status = Integer.parseInt(text, 0, mark < 0 ? first : mark, 10);
            return Optional.of(new CachedAnswer(text.substring(first + 1, second),
                    new StoredResponse(status, text.substring(second + 1)),
                    mark < 0 ? null : text.substring(mark + 1, first)));
        } catch (NumberFormatException notAnAnswer) {
            return Optional.empty();
        }
    }
}
