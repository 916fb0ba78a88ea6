package io.payonce.payment;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.ledgerCharges;
import static io.payonce.support.Fixtures.orderStatus;
import static io.payonce.support.Fixtures.payAnswer;
import static io.payonce.support.Fixtures.payPreferringWait;
import static io.payonce.support.Fixtures.payRequest;
import static io.payonce.support.Fixtures.sandbox;
import static io.payonce.support.Fixtures.sandboxNormal;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import jakarta.inject.Inject;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Answer;
import io.payonce.support.Await;
import io.payonce.support.Fixtures;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;

/**
 * A duplicate that arrives while the first execution of its token runs, or after it ended without a
 * final answer. The test profile's channel timeout is 3 s, so a "slow" first execution is a charge with a
 * latency just under it.
 */
@QuarkusTest
class DuplicateWaitTest {

    /** Under the 3 s channel timeout of the test profile, so the slow charge still succeeds. */
    private static final long SLOW_CHARGE_MS = 700;
    private static final Duration BOUND = Duration.ofSeconds(15);

    @Inject
    TestDatabase db;

    private ExecutorService background;

    @BeforeEach
    void setUp() {
        db.clean();
        sandboxNormal();
        background = Executors.newSingleThreadExecutor();
    }

    @AfterEach
    void tearDown() throws InterruptedException {
        background.shutdownNow();
        background.awaitTermination(5, TimeUnit.SECONDS);
    }

    @Test
    void duplicateWhileFirstRuns_receivesFirstResponse() throws Exception {
        PayRequest request = payRequest();
        CompletableFuture<Answer> first = slowFirstExecution(request);

        assertFalse(first.isDone(), "the first execution ended before the duplicate was sent");
        Answer duplicate = payAnswer(request);

        Answer original = first.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        assertAll(
                () -> assertEquals(200, original.status(), original.body()),
                () -> assertNull(original.replayed(), "the first execution is no replay"),
                () -> assertEquals(200, duplicate.status(), duplicate.body()),
                () -> assertEquals(original.body(), duplicate.body()),
                () -> assertEquals("true", duplicate.replayed()),
                () -> assertTrue(duplicate.elapsedMs() > SLOW_CHARGE_MS / 2,
                        "the duplicate answered after " + duplicate.elapsedMs() + " ms, without waiting"),
                () -> assertEquals(1, ledgerCharges(MERCHANT, request.orderNo())),
                () -> assertEquals(1, Fixtures.ledgerAttempts(MERCHANT, request.orderNo()),
                        "charge calls at the channel"));
    }

    @Test
    void waitOutlastingBound_gets409InProgressWithRetryAfter() throws Exception {
        PayRequest request = payRequest();
        CompletableFuture<Answer> first = slowFirstExecution(request);

        Answer impatient = payPreferringWait(request, 0);

        assertFalse(first.isDone(), "the first execution ended before the duplicate's bound");
        JsonPath problem = JsonPath.from(impatient.body());
        assertAll(
                () -> assertEquals(409, impatient.status(), impatient.body()),
                () -> assertEquals("request_in_progress", problem.getString("code")),
                () -> assertTrue(impatient.contentType().startsWith("application/problem+json"),
                        impatient.contentType()),
                () -> assertNotNull(impatient.retryAfter(), "Retry-After"),
                () -> assertNull(impatient.replayed(), "a refusal is no replay"));
        first.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Test
    void retryAfterInProgressRefusal_receivesFirstResponse() throws Exception {
        PayRequest request = payRequest();
        CompletableFuture<Answer> first = slowFirstExecution(request);
        Answer impatient = payPreferringWait(request, 0);
        assertEquals(409, impatient.status(), impatient.body());
        Answer original = first.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);

        Answer retry = payPreferringWait(request, 0);

        assertAll(
                () -> assertEquals(200, original.status(), original.body()),
                () -> assertEquals(200, retry.status(), retry.body()),
                () -> assertEquals(original.body(), retry.body()),
                () -> assertEquals("true", retry.replayed()),
                () -> assertEquals(1, ledgerCharges(MERCHANT, request.orderNo())));
    }

    @Test
    void duplicateAfterUnknownOutcome_receivesSameProcessingAnswer() {
        PayRequest request = payRequest();
        sandbox("timeout_after_accept", 0, 1);
        Answer first = payAnswer(request);

        Answer duplicate = payPreferringWait(request, 1);

        JsonPath body = JsonPath.from(first.body());
        assertAll(
                () -> assertEquals(202, first.status(), first.body()),
                () -> assertEquals("PROCESSING", body.getString("status")),
                () -> assertEquals(request.orderNo(), body.getString("order_no")),
                () -> assertEquals(request.requestNo(), body.getString("request_no")),
                () -> assertEquals(202, duplicate.status(), duplicate.body()),
                () -> assertEquals(first.body(), duplicate.body()),
                () -> assertEquals("true", duplicate.replayed()),
                () -> assertEquals(1, db.payments(MERCHANT, request.orderNo()), "payment records"),
                () -> assertEquals(1, db.count("SELECT COUNT(*) FROM payments WHERE merchant_id = ? AND request_no = ?"
                        + " AND status = 'PROCESSING'", MERCHANT, request.requestNo()), "PROCESSING payment records"),
                () -> assertEquals("IN_PROGRESS", db.tokenState(MERCHANT, request.token())));
    }

    @Test
    void failureBeforeAccept_releasesTokenAndLeavesNoTrace() {
        PayRequest request = payRequest();
        sandbox("fail_before_accept", 0, 1);

        Answer first = payAnswer(request);

        assertAll(
                () -> assertEquals(503, first.status(), first.body()),
                () -> assertEquals("temporarily_unavailable", JsonPath.from(first.body()).getString("code")),
                () -> assertNotNull(first.retryAfter(), "Retry-After"),
                () -> assertEquals(0, db.payments(MERCHANT, request.orderNo()), "payment records"),
                () -> assertEquals("PENDING", orderStatus(MERCHANT, request.orderNo())),
                () -> assertEquals("AVAILABLE", db.tokenState(MERCHANT, request.token())),
                () -> assertEquals(0, ledgerCharges(MERCHANT, request.orderNo())));
    }

    @Test
    void releasedToken_retriedWithSameRequest_pays() {
        PayRequest request = payRequest();
        sandbox("fail_before_accept", 0, 1);
        assertEquals(503, payAnswer(request).status());

        Answer retry = payAnswer(request);

        assertAll(
                () -> assertEquals(200, retry.status(), retry.body()),
                () -> assertEquals("PAID", JsonPath.from(retry.body()).getString("status")),
                () -> assertNull(retry.replayed(), "the retry executes, it replays nothing"),
                () -> assertEquals(1, db.payments(MERCHANT, request.orderNo()), "payment records"),
                () -> assertEquals(1, ledgerCharges(MERCHANT, request.orderNo())),
                () -> assertEquals("PAID", orderStatus(MERCHANT, request.orderNo())),
                () -> assertEquals("COMPLETED", db.tokenState(MERCHANT, request.token())));
    }

    /**
     * A copy of another request under a taken key, while every look of its wait at MySQL fails: the first
     * request's 202 that reaches its wait through Redis is checked against its fingerprint first, and it is
     * refused 422 rather than handed that 202 at its deadline.
     */
    @Test
    void copyOfAnotherRequest_whoseLooksAtMySqlAllFail_isRefused422_neverHandedTheFirstRequests202() throws Exception {
        PayRequest first = payRequest();
        PayRequest other = new PayRequest(first.orderNo(), first.requestNo(), first.token(), first.amount() + 1);
        String keys = "po:{" + MERCHANT + ":" + first.token() + "}";
        // the first request's execution holds the ownership key, so the copy goes straight to waiting
        try {
            db.redisSet(keys + ":own", "the-first-request");
        } catch (RuntimeException redisDown) {
            Assumptions.abort("the 202 reaches the waiter through Redis, which this class runs without");
        }
        Answer copy;
        try (AutoCloseable mysqlSilent = db.lockTable("idempotency_tokens")) {
            CompletableFuture<Answer> waiting = CompletableFuture.supplyAsync(() -> payPreferringWait(other, 4),
                    background);
            Thread.sleep(300);
            db.redisSet(keys + ":res", "202|the-first-requests-fingerprint|{\"status\":\"PROCESSING\"}");
            copy = waiting.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        }

        assertAll(
                () -> assertEquals(422, copy.status(), copy.body()),
                () -> assertEquals("idempotency_key_reused", JsonPath.from(copy.body()).getString("code")));
    }

    /**
     * A copy whose claim waits behind another copy's claim not yet committed, past the database timeout: it cannot
     * know whether that one will charge, so it never answers 503 ("nothing was charged"); once the claim commits
     * it waits for that execution, and answers by its bound.
     */
    @Test
    void copyWhoseClaimTimesOutBehindAnotherCopysClaim_neverAnswers503() throws Exception {
        PayRequest request = payRequest();
        Answer copy;
        try (AutoCloseable holder = db.uncommitted("""
                INSERT INTO idempotency_tokens (merchant_id, token, state, fingerprint, request_no, lease_until,
                    expires_at, created_at, updated_at, epoch)
                VALUES (?, ?, 'IN_PROGRESS', NULL, ?, DATE_ADD(UTC_TIMESTAMP(3), INTERVAL 1 MINUTE),
                    DATE_ADD(UTC_TIMESTAMP(3), INTERVAL 1 DAY), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), 1)""",
                MERCHANT, request.token(), request.requestNo())) {
            CompletableFuture<Answer> waiting = CompletableFuture.supplyAsync(() -> payPreferringWait(request, 5),
                    background);
            // past the database timeout (2 s) of the copy's claim, within its look's bound after it
            Thread.sleep(3_000);
            holder.close();
            copy = waiting.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        }

        assertAll(
                () -> assertEquals(409, copy.status(), copy.body()),
                () -> assertEquals("request_in_progress", JsonPath.from(copy.body()).getString("code")),
                () -> assertNotNull(copy.retryAfter(), "Retry-After"),
                () -> assertEquals(0, db.payments(MERCHANT, request.orderNo()), "the copy opened nothing"));
    }

    /** The first execution of {@code request}, sent in the background: a slow charge, its token claimed. */
    private CompletableFuture<Answer> slowFirstExecution(PayRequest request) {
        sandbox("ok", SLOW_CHARGE_MS, 1);
        CompletableFuture<Answer> first = CompletableFuture.supplyAsync(() -> payAnswer(request), background);
        // bounded, so a first request that never claims fails
        Await.until("the first request to claim its token", Duration.ofSeconds(5),
                () -> "IN_PROGRESS".equals(db.tokenState(MERCHANT, request.token())));
        return first;
    }
}
