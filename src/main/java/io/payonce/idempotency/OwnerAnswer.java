package io.payonce.idempotency;

/** What an owner answered, and how the gate hands it over. */
public record OwnerAnswer(StoredResponse response, Kind kind) {

    public enum Kind {
        /** Stored with the token as its answer for good: cached and replayed to every copy. */
        FINAL,
        /** A 202 stored while the outcome is unknown: published as what the first execution said so far. */
        INTERIM,
        /** Not stored (nothing can be said for good yet, and the token was left free): copies look again. */
        UNSTORED
    }

    public static OwnerAnswer stored(StoredResponse response) {
        return new OwnerAnswer(response, CachedAnswer.isFinal(response) ? Kind.FINAL : Kind.INTERIM);
    }

    public static OwnerAnswer unstored(StoredResponse response) {
        return new OwnerAnswer(response, Kind.UNSTORED);
    }
}
