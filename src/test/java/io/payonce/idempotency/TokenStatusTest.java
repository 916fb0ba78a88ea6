package io.payonce.idempotency;

import static io.payonce.idempotency.TokenStatus.AVAILABLE;
import static io.payonce.idempotency.TokenStatus.COMPLETED;
import static io.payonce.idempotency.TokenStatus.IN_PROGRESS;
import static io.payonce.idempotency.TokenStatus.MACHINE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;

import org.junit.jupiter.api.Test;

import io.payonce.state.TransitionTables;

class TokenStatusTest {

    @Test
    void transitions_areExactlyClaimThenCompleteOrRelease() {
        TransitionTables.assertExactly(MACHINE, TokenStatus.class,
                Set.of("AVAILABLE -> IN_PROGRESS", "IN_PROGRESS -> COMPLETED", "IN_PROGRESS -> AVAILABLE"));
    }

    @Test
    void issuedToken_isAvailable() {
        assertEquals(AVAILABLE, MACHINE.initial());
    }

    @Test
    void completedToken_keepsItsAnswerForever() {
        assertTrue(MACHINE.isFinal(COMPLETED));
        assertFalse(MACHINE.allows(COMPLETED, AVAILABLE));
        assertFalse(MACHINE.allows(COMPLETED, IN_PROGRESS));
    }

    @Test
    void tokenIsCompleted_onlyByItsOwnerInProgress() {
        assertTrue(MACHINE.allows(IN_PROGRESS, COMPLETED));
        assertFalse(MACHINE.allows(AVAILABLE, COMPLETED));
    }
}
