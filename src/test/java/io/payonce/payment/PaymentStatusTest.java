package io.payonce.payment;

import static io.payonce.payment.PaymentStatus.FAILED;
import static io.payonce.payment.PaymentStatus.MACHINE;
import static io.payonce.payment.PaymentStatus.PROCESSING;
import static io.payonce.payment.PaymentStatus.SUCCEEDED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;

import org.junit.jupiter.api.Test;

import io.payonce.state.TransitionTables;

class PaymentStatusTest {

    @Test
    void transitions_areExactlyProcessingToEitherEnd() {
        TransitionTables.assertExactly(MACHINE, PaymentStatus.class,
                Set.of("PROCESSING -> SUCCEEDED", "PROCESSING -> FAILED"));
    }

    @Test
    void newPayment_isProcessing() {
        assertEquals(PROCESSING, MACHINE.initial());
    }

    @Test
    void settledPayment_neverMovesAgain() {
        assertTrue(MACHINE.isFinal(SUCCEEDED));
        assertTrue(MACHINE.isFinal(FAILED));
        assertFalse(MACHINE.allows(SUCCEEDED, FAILED));
        assertFalse(MACHINE.allows(FAILED, SUCCEEDED));
    }
}
