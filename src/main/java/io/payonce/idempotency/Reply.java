package io.payonce.idempotency;

/**
 * The one answer type every entrance renders: what one copy of a request is told (its status and exact body
 * bytes), whether it is the first execution's answer replayed, and what kind of answer it is, which decides
 * what the caller may do next and, for a queue command, what becomes of its delivery. The HTTP resources
 * render it as a response (a {@link Kind#RETRYABLE} answer with {@code Retry-After}); the queue entrance
 * settles the delivery by its kind and publishes it to {@code reply_to}.
 */
public record Reply(StoredResponse response, boolean replayed, Kind kind) {

    /** What an answer is, for whoever has to act on it. */
    public enum Kind {
        /**
         * Final: stored with the token and replayed to every copy, or a refusal that no retry can change
         * (another request's fingerprint).
         */
        FINAL,
        /**
         * A 202: the request's record exists and recovery settles it; its final answer is owed and reaches
         * the caller later (a retry, a poll, a queue command's reply once settled).
         */
        OWED,
        /**
         * A 202 given while the opening's COMMIT is in doubt: a record may exist (then it is settled like an
         * owed one) or may never have been written (then a retry runs the request); nobody can say which yet.
         */
        IN_DOUBT,
        /**
         * Not stored, and retrying is right: nothing can happen later under this copy's own execution (a
         * 503), or another execution runs that decides the answer (a 409 {@code request_in_progress}, or a
         * number's holder still in flight). Answered with {@code Retry-After}.
         */
        RETRYABLE,
        /**
         * The request itself is refused (malformed, no merchant, no or an invalid key): it never executed and
         * never will as sent.
         */
        REJECTED
    }

    public static Reply of(StoredResponse response, boolean replayed, Kind kind) {
        return new Reply(response, replayed, kind);
    }

    /** An answer stored with the token, replayed: final, or the 202 of a record recovery settles. */
    public static Reply replay(StoredResponse response) {
        return new Reply(response, true, CachedAnswer.isFinal(response) ? Kind.FINAL : Kind.OWED);
    }

    /** True when no later answer can replace this one: a final answer, or a refusal of the request itself. */
    public boolean isFinal() {
        return kind == Kind.FINAL || kind == Kind.REJECTED;
    }

    public int status() {
        return response.status();
    }
}
