package io.payonce.payment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Instant;

import org.junit.jupiter.api.Test;

import io.payonce.idempotency.StoredResponse;
import io.payonce.order.Order;
import io.payonce.order.OrderStatus;

/**
 * The settlement moves a payment and an order in one statement; both moves are checked against their
 * tables before it is sent.
 */
class PaymentRepositoryTest {

    private static final Instant NOW = Instant.parse("2030-01-01T00:00:00Z");
    private static final Order PAYING = new Order(1, "m", "o-1", 100, "EUR", OrderStatus.PAYING, 1, NOW, NOW, 0);
    private static final StoredResponse ANSWER = new StoredResponse(200, "{}");

    // no pool: sending any SQL would fail with a NullPointerException instead
    private final PaymentRepository payments = new PaymentRepository(null);

    @Test
    void settlementLeavingThePaymentProcessing_isRefusedBeforeAnySqlIsSent() {
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> payments.settle(7,
                PaymentStatus.PROCESSING, null, null, PAYING, OrderStatus.PAID, "tok", ANSWER, NOW));

        assertEquals("illegal PaymentStatus transition PROCESSING -> PROCESSING", refused.getMessage());
    }

    @Test
    void settlementLeavingTheOrderPaying_isRefusedBeforeAnySqlIsSent() {
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> payments.settle(7,
                PaymentStatus.SUCCEEDED, null, "txn", PAYING, OrderStatus.PAYING, "tok", ANSWER, NOW));

        assertEquals("illegal OrderStatus transition PAYING -> PAYING", refused.getMessage());
    }
}
