package io.payonce.payment;

import java.util.Map;
import java.util.Set;

import io.payonce.state.StateMachine;

/** A payment attempt is PROCESSING until the channel's outcome is known; both ends are final. */
public enum PaymentStatus {
    PROCESSING,
    SUCCEEDED,
    FAILED;

    /**
     * Only the channel's final word moves a payment, and only once. A PROCESSING record the channel never
     * accepted is deleted instead (the attempt is taken back), so it has no state to go to.
     */
    public static final StateMachine<PaymentStatus> MACHINE = StateMachine.of(PROCESSING, Map.of(
            PROCESSING, Set.of(SUCCEEDED, FAILED),
            SUCCEEDED, Set.of(),
            FAILED, Set.of()));
}
