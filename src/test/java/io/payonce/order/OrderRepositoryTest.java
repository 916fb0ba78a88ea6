package io.payonce.order;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Instant;

import org.junit.jupiter.api.Test;

/** The repository checks a transition against the table before it touches the database. */
class OrderRepositoryTest {

    private static final Instant NOW = Instant.parse("2030-01-01T00:00:00Z");

    @Test
    void paidOrderMovedBackToPending_isRefusedBeforeAnySqlIsSent() {
        // no pool and no client: sending any SQL would fail with a NullPointerException instead
        OrderRepository orders = new OrderRepository(null);
        Order paid = new Order(1, "m", "o-1", 100, "EUR", OrderStatus.PAID, 2, NOW, NOW, 0);

        IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> orders.transition(null, paid, OrderStatus.PAID, OrderStatus.PENDING, NOW));

        assertEquals("illegal OrderStatus transition PAID -> PENDING", refused.getMessage());
    }
}
