package io.payonce.idempotency;

/** What a copy that could not claim a token found there instead. */
public sealed interface Claim {

    /** The first execution finished; its answer is replayed. */
    record Finished(StoredResponse response) implements Claim {
    }

    /** Another caller, on this instance or another, is executing it. */
    record Running() implements Claim {
    }

    /** Nobody holds it (released, or its first use rolled back): this copy may claim it again. */
    record Vacant() implements Claim {
    }
}
