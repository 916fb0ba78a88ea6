package io.payonce.order;

import java.util.Map;
import java.util.Set;

import io.payonce.state.StateMachine;

/** The states of an order; the legal transitions are written here and nowhere else. */
public enum OrderStatus {
    PENDING,
    PAYING,
    PAID;

    public static final StateMachine<OrderStatus> MACHINE = StateMachine.of(PENDING, Map.of(
            PENDING, Set.of(PAYING),
            // back to PENDING when the charge was declined or never accepted, so it can be paid again
            PAYING, Set.of(PAID, PENDING),
            // an order never moves backwards from PAID
            PAID, Set.of()));
}
