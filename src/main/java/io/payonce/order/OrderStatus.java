package io.payonce.order;

import java.util.List;
import java.util.Map;
import java.util.Set;

import io.payonce.state.StateMachine;

/** The states of an order; the legal transitions are written here and nowhere else. */
public enum OrderStatus {
    PENDING,
    PAYING,
    PAID,
    PARTIALLY_REFUNDED,
    REFUNDED;

    public static final StateMachine<OrderStatus> MACHINE = StateMachine.of(PENDING, Map.of(
            PENDING, Set.of(PAYING),
            // back to PENDING when the charge was declined or never accepted, so it can be paid again
            PAYING, Set.of(PAID, PENDING),
            // an order never moves backwards from PAID: refunds only move it forward, and partial refunds add up
            PAID, Set.of(PARTIALLY_REFUNDED, REFUNDED),
            PARTIALLY_REFUNDED, Set.of(PARTIALLY_REFUNDED, REFUNDED),
            REFUNDED, Set.of()));

    /** The states a refund may be opened in: paid, and not refunded in full yet. */
    public static final List<OrderStatus> REFUNDABLE = List.of(PAID, PARTIALLY_REFUNDED);
}
