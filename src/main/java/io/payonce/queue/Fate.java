package io.payonce.queue;

import io.payonce.idempotency.Reply;

/**
 * What becomes of one delivery of a command: the one table the queue entrance settles deliveries by, over the
 * {@link Reply.Kind kind} of the command's answer and what the database says. An acknowledgement is a promise
 * that the command's final answer will be published; a dead letter, that it never executed and never will as
 * sent. So a delivery is acknowledged only when its final answer is stored, or owed by a durable record that
 * recovery settles, and dead-lettered only when it never executed; anything else runs again, as an HTTP
 * client's retry would.
 */
enum Fate {

    /** The command runs through the gate. */
    RUN,
    /** Its final answer is owed to {@code reply_to} (a row of the outbox), then the delivery is acknowledged. */
    ANSWER,
    /**
     * Its answer now and its final answer once settled are owed, and the delivery acknowledged, if a durable
     * record owes that final answer; otherwise {@link #HOLD}.
     */
    OWE,
    /** Acknowledged: its final answer is stored and owed, or owed by a record that recovery settles. */
    ACKNOWLEDGE,
    /**
     * Held for {@code payonce.queue.hold} (below the broker's {@code consumer_timeout}), then returned to its
     * queue: it runs again.
     */
    HOLD,
    /** Answered with its problem straight to {@code reply_to} (no database needed), then dead-lettered. */
    DEAD_LETTER;

    /** The fate of a delivery whose command was answered {@code kind}: run, or refused before it could run. */
    static Fate of(Reply.Kind kind) {
        return switch (kind) {
            case FINAL -> ANSWER;
            // a 202 (owed or in doubt), or a copy told to retry: acknowledged only once a record owes the answer
            case OWED, IN_DOUBT, RETRYABLE -> OWE;
            case REJECTED -> DEAD_LETTER;
        };
    }

    /** After an {@link #OWE}: whether a durable record owes the final answer (and the rows were written). */
    static Fate owing(boolean owedByRecord) {
        return owedByRecord ? ACKNOWLEDGE : HOLD;
    }

    /** After an {@link #ANSWER} or an {@link #OWE} whose rows the database did not take (or not in time). */
    static Fate unwritten() {
        return HOLD;
    }

    /**
     * A command the broker delivers again, its {@code attempts}-th delivery after its first as counted in the
     * database: past {@code bound} it is dead-lettered once its token shows it {@code neverExecuted}; a command
     * that executed, or still runs somewhere, runs again (and is answered from its record), whatever the count.
     */
    static Fate redelivered(int attempts, int bound, boolean neverExecuted) {
        return attempts > bound && neverExecuted ? DEAD_LETTER : RUN;
    }

    /** A redelivery whose count the database did not take: nothing can be shown about it, so it runs later. */
    static Fate uncounted() {
        return HOLD;
    }
}
