package io.payonce.idempotency;

/** Where a token is in its life: AVAILABLE -> IN_PROGRESS -> COMPLETED, or back to AVAILABLE on release. */
public enum TokenStatus {
    /** Issued and never used, or released after a transient failure; its fingerprint stays bound. */
    AVAILABLE,
    /** An owner is executing the request; duplicates wait. */
    IN_PROGRESS,
    /** The first execution's final answer is stored and replayed to every duplicate. */
    COMPLETED
}
