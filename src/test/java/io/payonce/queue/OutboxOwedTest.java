package io.payonce.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Fixtures;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;

/**
 * When a queue command's answer is owed by a durable record, given the rows its token and payment are in: the
 * rows for the answer now and the final one later are written exactly then, and nothing otherwise. A 202 given
 * for an opening whose COMMIT never took (a Galera conflict found late, a connection lost with the COMMIT) leaves
 * no token row and no payment; an opener whose charge may still be refused before acceptance can still take its
 * record back.
 */
@QuarkusTest
class OutboxOwedTest {

    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final Outbox.Answer NOW = Outbox.Answer.of("replies", "c-1", 202, false, false,
            "{\"status\":\"PROCESSING\"}");

    @Inject
    Outbox outbox;

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
        db.execute("DELETE FROM queue_outbox");
    }

    @Test
    void tokenWithNoRowAndNoRecord_owesNothing_andNothingIsWritten() {
        assertFalse(owe(Fixtures.token()));
        assertEquals(0, rows());
    }

    @Test
    void recordItsOpenerMayStillTakeBack_owesNothingYet() {
        PayRequest opened = db.paymentProcessing();

        assertFalse(owe(opened.token()));
        assertEquals(0, rows());
    }

    @Test
    void recordWhoseOpenerRecordedIts202_owesTheFinalAnswer_bothRowsWritten() {
        PayRequest opened = db.paymentProcessing();
        db.execute("UPDATE idempotency_tokens SET response_status = 202, response_body = '{}' WHERE token = ?",
                opened.token());

        assertTrue(owe(opened.token()));
        assertEquals(2, rows());
        assertEquals(1, db.count("SELECT COUNT(*) FROM queue_outbox WHERE state = 'AWAITING' AND is_final = 1"));
        assertEquals(1, db.count("SELECT COUNT(*) FROM queue_outbox WHERE state = 'READY' AND is_final = 0"));
    }

    @Test
    void recordTakenOverByAReconciler_owesTheFinalAnswer() {
        PayRequest opened = db.paymentProcessing();
        db.execute("UPDATE payments SET epoch = epoch + 1 WHERE token = ?", opened.token());

        assertTrue(owe(opened.token()));
    }

    @Test
    void settledToken_owesItsStoredAnswer() {
        PayRequest opened = db.paymentProcessing();
        db.execute("UPDATE idempotency_tokens SET state = 'COMPLETED', response_status = 200, response_body = '{}'"
                + " WHERE token = ?", opened.token());

        assertTrue(owe(opened.token()));
    }

    @Test
    void releasedToken_owesNothing() {
        PayRequest opened = db.paymentProcessing();
        db.execute("DELETE FROM payments WHERE token = ?", opened.token());
        db.execute("UPDATE idempotency_tokens SET state = 'AVAILABLE', response_status = NULL WHERE token = ?",
                opened.token());

        assertFalse(owe(opened.token()));
        assertFalse(outbox.oweOnceRecorded(Fixtures.MERCHANT, opened.token(), null).await().atMost(BOUND),
                "without a reply queue only the question is asked");
    }

    private boolean owe(String token) {
        return outbox.oweOnceRecorded(Fixtures.MERCHANT, token, NOW).await().atMost(BOUND);
    }

    private long rows() {
        return db.count("SELECT COUNT(*) FROM queue_outbox");
    }
}
