package io.payonce.idempotency;

/**
 * What an owner answered, and of which {@link Reply.Kind}, which also says how the gate hands it over: a
 * final answer and an owed 202 are cached and published to every waiter (the 202 as what the first execution
 * answered so far); a retryable refusal or a 202 in doubt is not, and waiters look at the token again.
 */
public record OwnerAnswer(StoredResponse response, Reply.Kind kind) {

    /** Stored with the token: final, or the 202 of a record that recovery settles. */
    public static OwnerAnswer stored(StoredResponse response) {
        return new OwnerAnswer(response, CachedAnswer.isFinal(response) ? Reply.Kind.FINAL : Reply.Kind.OWED);
    }

    /** Not stored: nothing can be said for good yet, and the token was left free; a retry decides again. */
    public static OwnerAnswer retryable(StoredResponse response) {
        return new OwnerAnswer(response, Reply.Kind.RETRYABLE);
    }

    /** A 202 whose opening may or may not have committed: a record may exist, or a retry may run it anew. */
    public static OwnerAnswer inDoubt(StoredResponse response) {
        return new OwnerAnswer(response, Reply.Kind.IN_DOUBT);
    }

    /** True when copies may be given this answer from the cache: it stands for what the token holds. */
    boolean handedOver() {
        return kind == Reply.Kind.FINAL || kind == Reply.Kind.OWED;
    }
}
