package io.payonce.idempotency;

/** What trying to claim a token found. */
public sealed interface Claim {

    /** This caller owns the token and executes the request. */
    record Owned() implements Claim {
    }

    /** The first execution finished; its answer is replayed. */
    record Finished(StoredResponse response) implements Claim {
    }

    /** Another caller, on this instance or another, is executing it. */
    record Running() implements Claim {
    }
}
