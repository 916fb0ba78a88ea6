package io.payonce.payment;

import static io.payonce.support.Fixtures.MERCHANT;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.idempotency.StoredResponse;
import io.payonce.idempotency.TokenRepository;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;

/**
 * Every write an owner makes on a payment it holds names its epoch, and changes nothing once someone took
 * the payment over: a late owner (paused, its COMMIT answered late, its lease over) cannot undo, postpone or
 * answer for a payment that is no longer its own.
 */
@QuarkusTest
class OwnershipFenceTest {

    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final StoredResponse PROCESSING = new StoredResponse(202, "{\"status\":\"PROCESSING\"}");

    @Inject
    TestDatabase db;

    @Inject
    PaymentRepository payments;

    @Inject
    TokenRepository tokens;

    @Inject
    io.payonce.database.Database database;

    @BeforeEach
    void clean() {
        db.clean();
    }

    @Test
    void takeOverByReconciliation_incrementsTheEpoch() {
        PayRequest p = db.paymentProcessing(Duration.ofMinutes(5), Duration.ofSeconds(-1));
        int before = epoch(p);

        var claimed = payments.claimForReconcile("run-1", Duration.ofSeconds(1), Duration.ofMinutes(1),
                Duration.ofHours(1), 10).await().atMost(BOUND);

        assertAll(
                () -> assertEquals(1, claimed.size()),
                () -> assertEquals(before + 1, claimed.get(0).payment().epoch(), "the claim reads the new epoch"),
                () -> assertEquals(before + 1, epoch(p)));
    }

    @Test
    void lateOwnersUndo_deletesNothing_afterATakeOver() {
        PayRequest p = db.paymentProcessing();
        Payment mine = payment(p);
        takeOver(p);

        boolean deleted = database.inTransaction(tx -> payments.deleteUnaccepted(tx, mine.id(), mine.epoch()))
                .await().atMost(BOUND);

        assertAll(
                () -> assertFalse(deleted),
                () -> assertEquals(1, db.payments(MERCHANT, p.orderNo()), "the record stands"));
    }

    @Test
    void ownersUndo_deletes_whileItsEpochHolds() {
        PayRequest p = db.paymentProcessing();
        Payment mine = payment(p);

        boolean deleted = database.inTransaction(tx -> payments.deleteUnaccepted(tx, mine.id(), mine.epoch()))
                .await().atMost(BOUND);

        assertTrue(deleted);
        assertEquals(0, db.payments(MERCHANT, p.orderNo()));
    }

    @Test
    void lateOwnersInterimAnswer_isNotRecorded_afterATakeOver() {
        PayRequest p = db.paymentProcessing();
        Payment mine = payment(p);
        takeOver(p);

        boolean recorded = payments.recordInterim(mine.id(), mine.epoch(), 1, PROCESSING, Instant.now())
                .await().atMost(BOUND);

        assertFalse(recorded);
        assertEquals(0, db.count("SELECT COUNT(*) FROM idempotency_tokens WHERE token = ? AND response_status IS NOT NULL",
                p.token()));
    }

    @Test
    void ownersInterimAnswer_isRecorded_whileItsEpochHolds() {
        PayRequest p = db.paymentProcessing();
        Payment mine = payment(p);

        assertTrue(payments.recordInterim(mine.id(), mine.epoch(), 1, PROCESSING, Instant.now()).await().atMost(BOUND));
    }

    @Test
    void lateReconcilersPostpone_changesNothing_afterAnotherTookOver() {
        PayRequest p = db.paymentProcessing();
        Payment mine = payment(p);
        takeOver(p);

        assertFalse(payments.postpone(mine.id(), mine.epoch(), Duration.ofMinutes(5)).await().atMost(BOUND));
        assertEquals(0, db.count("SELECT reconcile_attempts FROM payments WHERE request_no = ?", p.requestNo()));
    }

    @Test
    void heldAnswersForTheCurrentEpochOnly() {
        PayRequest p = db.paymentProcessing();
        Payment mine = payment(p);
        takeOver(p);

        assertFalse(payments.held(mine.id(), mine.epoch()).await().atMost(BOUND));
        assertTrue(payments.held(mine.id(), mine.epoch() + 1).await().atMost(BOUND));
    }

    @Test
    void tokenWritesOfAnEarlierClaim_changeNothing() {
        PayRequest p = db.paymentProcessing();
        // the token was released and claimed again since: its epoch moved on
        db.execute("UPDATE idempotency_tokens SET epoch = epoch + 1 WHERE token = ?", p.token());

        boolean released = database.inTransaction(tx -> tokens.release(tx, MERCHANT, p.token(), 1, Instant.now()))
                .await().atMost(BOUND);
        boolean completed = database.inTransaction(tx -> tokens.complete(tx, MERCHANT, p.token(), 1,
                new StoredResponse(200, "{}"), Instant.now())).await().atMost(BOUND);

        assertAll(
                () -> assertFalse(released),
                () -> assertFalse(completed),
                () -> assertEquals("IN_PROGRESS", db.tokenState(MERCHANT, p.token())));
    }

    private void takeOver(PayRequest p) {
        db.execute("UPDATE payments SET epoch = epoch + 1 WHERE merchant_id = ? AND request_no = ?", MERCHANT,
                p.requestNo());
    }

    private int epoch(PayRequest p) {
        return (int) db.count("SELECT epoch FROM payments WHERE merchant_id = ? AND request_no = ?", MERCHANT,
                p.requestNo());
    }

    private Payment payment(PayRequest p) {
        return payments.find(MERCHANT, p.requestNo()).await().atMost(BOUND).orElseThrow();
    }
}
