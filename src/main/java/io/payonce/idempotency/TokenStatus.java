package io.payonce.idempotency;

import java.util.Map;
import java.util.Set;

import io.payonce.state.StateMachine;

/** Where a token is in its life: AVAILABLE -> IN_PROGRESS -> COMPLETED, or back to AVAILABLE on release. */
public enum TokenStatus {
    /** Issued and never used, or released after a transient failure; its fingerprint stays bound. */
    AVAILABLE,
    /** An owner is executing the request; duplicates wait. */
    IN_PROGRESS,
    /** The first execution's final answer is stored and replayed to every duplicate. */
    COMPLETED;

    /**
     * An issued token has no row until its first claim, and reads as AVAILABLE (see {@link TokenFinding#of}),
     * so the insert of a first claim is the same AVAILABLE -> IN_PROGRESS move as a later claim.
     */
    public static final StateMachine<TokenStatus> MACHINE = StateMachine.of(AVAILABLE, Map.of(
            AVAILABLE, Set.of(IN_PROGRESS),
            // released by its owner after a transient failure, or by the reaper once its owner died
            IN_PROGRESS, Set.of(COMPLETED, AVAILABLE),
            COMPLETED, Set.of()));
}
