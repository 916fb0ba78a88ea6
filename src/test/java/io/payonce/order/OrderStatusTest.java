package io.payonce.order;

import static io.payonce.order.OrderStatus.MACHINE;
import static io.payonce.order.OrderStatus.PAID;
import static io.payonce.order.OrderStatus.PARTIALLY_REFUNDED;
import static io.payonce.order.OrderStatus.PAYING;
import static io.payonce.order.OrderStatus.PENDING;
import static io.payonce.order.OrderStatus.REFUNDED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;

import org.junit.jupiter.api.Test;

import io.payonce.state.TransitionTables;

class OrderStatusTest {

    @Test
    void transitions_areExactlyPayThenPaidOrBackToPending_thenRefundsForward() {
        TransitionTables.assertExactly(MACHINE, OrderStatus.class,
                Set.of("PENDING -> PAYING", "PAYING -> PAID", "PAYING -> PENDING",
                        "PAID -> PARTIALLY_REFUNDED", "PAID -> REFUNDED",
                        "PARTIALLY_REFUNDED -> PARTIALLY_REFUNDED", "PARTIALLY_REFUNDED -> REFUNDED"));
    }

    @Test
    void newOrder_isPending() {
        assertEquals(PENDING, MACHINE.initial());
    }

    @Test
    void paidOrder_neverBecomesPayableAgain_andRefundedInFull_neverMoves() {
        for (OrderStatus paid : Set.of(PAID, PARTIALLY_REFUNDED, REFUNDED)) {
            assertFalse(MACHINE.allows(paid, PENDING), paid.name());
            assertFalse(MACHINE.allows(paid, PAYING), paid.name());
            assertFalse(MACHINE.allows(paid, PAID), paid.name());
        }
        assertTrue(MACHINE.isFinal(REFUNDED));
    }

    @Test
    void orderOnlyBecomesPaid_whilePaying() {
        assertTrue(MACHINE.allows(PAYING, PAID));
        assertFalse(MACHINE.allows(PENDING, PAID));
    }
}
