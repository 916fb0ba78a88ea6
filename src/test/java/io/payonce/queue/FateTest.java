package io.payonce.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

import io.payonce.idempotency.Reply;

/** The fate table, row by row: what becomes of a delivery by the kind of its answer and what the database says. */
class FateTest {

    private static final int BOUND = 5;

    @Test
    void finalAnswer_isOwedToReplyTo_thenAcknowledged() {
        assertEquals(Fate.ANSWER, Fate.of(Reply.Kind.FINAL));
    }

    @Test
    void owed202_isAcknowledged_onlyOnceARecordOwesTheFinalAnswer() {
        assertEquals(Fate.OWE, Fate.of(Reply.Kind.OWED));
        assertEquals(Fate.ACKNOWLEDGE, Fate.owing(true));
        assertEquals(Fate.HOLD, Fate.owing(false));
    }

    @Test
    void inDoubt202_isOwedLikeAnyOther_soNeverAcknowledgedWithoutARecord() {
        assertEquals(Fate.OWE, Fate.of(Reply.Kind.IN_DOUBT));
    }

    @Test
    void retryableRefusal_isNeverDeadLettered_butOwedOnceARecordExists_elseHeld() {
        assertEquals(Fate.OWE, Fate.of(Reply.Kind.RETRYABLE));
    }

    @Test
    void rejectedCommand_isAnsweredAndDeadLettered() {
        assertEquals(Fate.DEAD_LETTER, Fate.of(Reply.Kind.REJECTED));
    }

    @Test
    void answerTheDatabaseDidNotTake_isHeld() {
        assertEquals(Fate.HOLD, Fate.unwritten());
    }

    @Test
    void redelivery_withinItsBound_runs() {
        assertEquals(Fate.RUN, Fate.redelivered(BOUND, BOUND, true));
    }

    @Test
    void redelivery_pastItsBound_isDeadLettered_onlyWhenItNeverExecuted() {
        assertEquals(Fate.DEAD_LETTER, Fate.redelivered(BOUND + 1, BOUND, true));
        assertEquals(Fate.RUN, Fate.redelivered(BOUND + 100, BOUND, false));
    }

    @Test
    void redelivery_theDatabaseCouldNotCount_isHeld() {
        assertEquals(Fate.HOLD, Fate.uncounted());
    }
}
