package io.payonce.order;

import static io.payonce.order.OrderStatus.MACHINE;
import static io.payonce.order.OrderStatus.PAID;
import static io.payonce.order.OrderStatus.PAYING;
import static io.payonce.order.OrderStatus.PENDING;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;

import org.junit.jupiter.api.Test;

import io.payonce.state.TransitionTables;

class OrderStatusTest {

    @Test
    void transitions_areExactlyPayThenPaidOrBackToPending() {
        TransitionTables.assertExactly(MACHINE, OrderStatus.class,
                Set.of("PENDING -> PAYING", "PAYING -> PAID", "PAYING -> PENDING"));
    }

    @Test
    void newOrder_isPending() {
        assertEquals(PENDING, MACHINE.initial());
    }

    @Test
    void paidOrder_neverMovesAgain() {
        assertTrue(MACHINE.isFinal(PAID));
        assertFalse(MACHINE.allows(PAID, PENDING));
        assertFalse(MACHINE.allows(PAID, PAYING));
    }

    @Test
    void orderOnlyBecomesPaid_whilePaying() {
        assertTrue(MACHINE.allows(PAYING, PAID));
        assertFalse(MACHINE.allows(PENDING, PAID));
    }
}
