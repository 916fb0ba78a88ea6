package io.payonce.reconcile;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.pay;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.token;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Answer;
import io.payonce.support.Await;
import io.payonce.support.Concurrently;
import io.payonce.support.Fixtures;
import io.payonce.support.Operations;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.SqlConnection;
import io.vertx.mutiny.sqlclient.Transaction;
import io.vertx.mutiny.sqlclient.Tuple;

/** Recovery: payments left PROCESSING, dead token leases, expired tokens. The job is run by hand. */
@QuarkusTest
class ReconcilerTest {

    private static final Duration RUN = Duration.ofSeconds(20);
    /** Past min-age (30 s, the test profile's default). */
    private static final Duration OLD_ENOUGH = Duration.ofMinutes(1);
    private static final Duration LEASE_OVER = Duration.ofSeconds(-1);

    @Inject
    TestDatabase db;

    @Inject
    Reconciler reconciler;

    @Inject
    Pool pool;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
    }

    /**
     * A payment charged at the channel whose owner never heard the answer and is gone: as old as
     * reconciliation requires, its leases over.
     */
    private PayRequest chargedButUnsettled() {
        PayRequest p = db.paymentProcessing(OLD_ENOUGH, LEASE_OVER);
        assertEquals("SUCCEEDED", Fixtures.chargeAtChannel(p));
        return p;
    }

    /** Older than min-age, and its owner's lease over: as a payment a dead or finished owner left. */
    private void ageProcessingPayments() {
        db.execute("UPDATE payments SET created_at = created_at - INTERVAL 1 MINUTE,"
                + " lease_until = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE status = 'PROCESSING'");
    }

    /** Past give-up-after (an hour in the test profile's defaults). */
    private void ageProcessingPaymentsPastGiveUp() {
        db.execute("UPDATE payments SET created_at = created_at - INTERVAL 2 HOUR,"
                + " lease_until = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE status = 'PROCESSING'");
    }

    /** Lets a postponed payment be looked at again now, instead of after its backoff. */
    private void endBackoff() {
        db.execute("UPDATE payments SET reconcile_after = NULL WHERE status = 'PROCESSING'");
    }

    private String channelState(String requestNo) {
        return as(MERCHANT).get("/sandbox/charges/" + requestNo).then().extract().path("status");
    }

    private Reconciler.Report run() {
        return reconciler.runOnce().await().atMost(RUN);
    }

    @Test
    void chargeSucceededAtChannel_settlesPaid_andDuplicatesGetThe200() {
        PayRequest p = chargedButUnsettled();

        Reconciler.Report report = run();

        assertEquals(1, report.settled());
        assertEquals("PAID", Fixtures.orderStatus(MERCHANT, p.orderNo()));
        as(MERCHANT).get("/payments/" + p.requestNo()).then().body("status", equalTo("SUCCEEDED"));
        pay(p).then().statusCode(200)
                .header("Idempotent-Replayed", "true")
                .body("status", equalTo("PAID"))
                .body("request_no", equalTo(p.requestNo()));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, p.orderNo()));
        assertEquals(1, Fixtures.ledgerAttempts(MERCHANT, p.orderNo()), "reconciliation queried, it never charged");
    }

    /**
     * A process that died after its payment record committed and before the charge left: the channel has
     * never heard of it. The customer asked once and was told "processing", so the same charge is sent
     * again, same number and amount, and the payment completes.
     */
    @Test
    void unknownToChannel_isChargedAgainWithTheSameNumber_andPaid() {
        PayRequest p = db.paymentProcessing(OLD_ENOUGH, LEASE_OVER);

        Reconciler.Report report = run();

        assertEquals(1, report.settled());
        as(MERCHANT).get("/payments/" + p.requestNo()).then().body("status", equalTo("SUCCEEDED"));
        assertEquals("PAID", Fixtures.orderStatus(MERCHANT, p.orderNo()));
        assertEquals("SUCCEEDED", channelState(p.requestNo()), "charged under the payment's own number");
        pay(p).then().statusCode(200).body("status", equalTo("PAID"));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, p.orderNo()));
        pay(token(), p.orderNo(), id("req")).then().statusCode(409).body("code", equalTo("order_not_payable"));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, p.orderNo()), "never a second charge");
    }

    /**
     * The channel accepts a charge long after the service gave up waiting. While it is pending,
     * reconciliation does nothing; once it succeeds, the payment is paid.
     */
    @Test
    void chargeStillPendingAtChannel_isLeftProcessing_thenPaidWhenItSucceeds() throws Exception {
        PayRequest p = Fixtures.payRequest();
        Fixtures.sandbox("ok", 4_500, 1);
        pay(p).then().statusCode(202);
        ageProcessingPayments();

        Reconciler.Report pending = run();

        assertEquals(0, pending.settled());
        assertEquals(1, pending.postponed());
        as(MERCHANT).get("/payments/" + p.requestNo()).then().body("status", equalTo("PROCESSING"));
        assertEquals(202, Fixtures.payPreferringWait(p, 0).status(), "the stored 202 again, at once");
        assertEquals(0, Fixtures.ledgerCharges(MERCHANT, p.orderNo()), "a pending charge has not taken the money yet");

        awaitChannelState(p.requestNo(), "SUCCEEDED");
        endBackoff();
        Reconciler.Report paid = run();

        assertEquals(1, paid.settled());
        assertEquals("PAID", Fixtures.orderStatus(MERCHANT, p.orderNo()));
        pay(p).then().statusCode(200).body("status", equalTo("PAID"));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, p.orderNo()));
    }

    @Test
    void leasedPayment_isLeftToItsOwner_howeverOld() {
        PayRequest p = db.paymentProcessing(OLD_ENOUGH, Duration.ofMinutes(1));

        Reconciler.Report report = run();

        assertEquals(0, report.settled() + report.postponed());
        as(MERCHANT).get("/payments/" + p.requestNo()).then().body("status", equalTo("PROCESSING"));
    }

    /**
     * Past give-up-after with no final word from the channel, the number is closed there before the payment
     * is reported failed, so the charge still pending can never succeed afterwards.
     */
    @Test
    void noFinalWordPastGiveUp_isClosedAtTheChannel_thenReportedNotCompleted() {
        PayRequest p = Fixtures.payRequest();
        Fixtures.sandbox("ok", 60_000, 1);
        pay(p).then().statusCode(202);
        ageProcessingPaymentsPastGiveUp();

        Reconciler.Report report = run();

        assertEquals(1, report.settled());
        assertEquals("CLOSED", channelState(p.requestNo()));
        as(MERCHANT).get("/payments/" + p.requestNo()).then().body("status", equalTo("FAILED"));
        assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, p.orderNo()));
        pay(p).then().statusCode(402).body("code", equalTo("payment_not_completed"));
        assertEquals(0, Fixtures.ledgerCharges(MERCHANT, p.orderNo()));
        pay(token(), p.orderNo(), id("req")).then().statusCode(200);
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, p.orderNo()));
    }

    @Test
    void declinedAtChannel_settlesDeclined() {
        PayRequest p = db.paymentProcessing(OLD_ENOUGH, LEASE_OVER);
        Fixtures.sandbox("decline", 0, 1);
        assertEquals("DECLINED", Fixtures.chargeAtChannel(p));

        run();

        pay(p).then().statusCode(402).body("code", equalTo("payment_declined"));
        assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, p.orderNo()));
        assertEquals(0, Fixtures.ledgerCharges(MERCHANT, p.orderNo()));
    }

    private void awaitChannelState(String requestNo, String state) {
        Await.until("the channel to say " + state + " of " + requestNo, Duration.ofSeconds(10),
                () -> channelState(requestNo), state::equals);
    }

    @Test
    void tooYoungPayment_isLeftToItsOwner() {
        PayRequest p = db.paymentProcessing();

        Reconciler.Report report = run();

        assertEquals(0, report.settled() + report.postponed());
        as(MERCHANT).get("/payments/" + p.requestNo()).then().body("status", equalTo("PROCESSING"));
    }

    @Test
    void duplicateWaitingDuringReconciliation_isAnsweredWithTheSettledResult() throws Exception {
        PayRequest p = chargedButUnsettled();
        CompletableFuture<Answer> waiting = CompletableFuture.supplyAsync(() -> Fixtures.payPreferringWait(p, 8));
        Await.until("the duplicate to wait", Duration.ofSeconds(5),
                () -> Operations.metric("payonce_idempotency_waiters") >= 1);

        run();

        Answer answer = waiting.get(15, TimeUnit.SECONDS);
        assertEquals(200, answer.status());
        assertEquals("PAID", answer.field("status"));
    }

    @Test
    void reconcilersOnSeveralInstancesAtOnce_settleEachPaymentOnce() {
        PayRequest a = chargedButUnsettled();
        PayRequest b = chargedButUnsettled();

        List<Reconciler.Report> reports = Concurrently.all(4, RUN, (g, c) -> run());

        assertEquals(2, reports.stream().mapToInt(Reconciler.Report::settled).sum());
        for (PayRequest p : List.of(a, b)) {
            assertEquals("PAID", Fixtures.orderStatus(MERCHANT, p.orderNo()));
            assertEquals(1, Fixtures.ledgerCharges(MERCHANT, p.orderNo()));
        }
    }

    @Test
    void deadLeaseWithoutPayment_isReleased_andTheRetryExecutes() {
        // an owner that claimed the token and died before its payment record existed
        PayRequest p = db.tokenInProgress(pendingOrder(), Duration.ofMinutes(-1));
        assertEquals(409, Fixtures.payPreferringWait(p, 0).status());

        Reconciler.Report report = run();

        assertEquals(1, report.leasesReleased());
        pay(p).then().statusCode(200).body("status", equalTo("PAID"));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, p.orderNo()));
    }

    /**
     * A settlement holds a live token's row and index entry while the release of dead leases runs. The
     * release must neither wait for that lock nor touch the live token: a locking scan of the
     * (state, lease_until) index would wait here for the open transaction (innodb_lock_wait_timeout) and
     * fail the bound.
     */
    @Test
    void releasingDeadLeases_doesNotWaitForALiveTokenBeingSettled() {
        String dead = db.tokenInProgress(id("order"), Duration.ofMinutes(-1)).token();
        String live = db.tokenInProgress(id("order"), Duration.ofMinutes(1)).token();
        SqlConnection settlement = pool.getConnection().await().atMost(RUN);
        try {
            Transaction tx = settlement.begin().await().atMost(RUN);
            settlement.preparedQuery("UPDATE idempotency_tokens SET state = 'COMPLETED', lease_until = NULL"
                    + " WHERE merchant_id = ? AND token = ?").execute(Tuple.of(MERCHANT, live)).await().atMost(RUN);

            int released = reconciler.releaseDeadLeases().await().atMost(Duration.ofSeconds(10));

            assertEquals(1, released);
            tx.commit().await().atMost(RUN);
        } finally {
            settlement.closeAndAwait();
        }
        assertEquals("AVAILABLE", db.tokenState(MERCHANT, dead));
        assertEquals("COMPLETED", db.tokenState(MERCHANT, live));
    }

    @Test
    void deadLeaseWithPayment_isNotReleased_reconciliationSettlesIt() {
        // the owner's leases on token and payment both over
        PayRequest p = chargedButUnsettled();

        Reconciler.Report report = run();

        assertEquals(0, report.leasesReleased());
        assertEquals("COMPLETED", db.tokenState(MERCHANT, p.token()));
        assertEquals("PAID", Fixtures.orderStatus(MERCHANT, p.orderNo()));
    }

    @Test
    void expiredTokens_arePurged_inProgressOnesKept() {
        for (int i = 0; i < 3; i++) {
            pay(token(), pendingOrder(), id("req")).then().statusCode(200);
        }
        // too young to be reconciled in this run: its token stays in progress
        PayRequest p = db.paymentProcessing();
        db.execute("UPDATE idempotency_tokens SET expires_at = '2020-01-01 00:00:00'");

        Reconciler.Report report = run();

        assertTrue(report.tokensPurged() >= 3, report.toString());
        assertEquals("IN_PROGRESS", db.tokenState(MERCHANT, p.token()));
    }

    /** A queue command's owed answer is read from its token when it is sent: the token outlives its expiry till then. */
    @Test
    void expiredToken_whoseAnswerAQueueCommandIsStillOwed_isKept() {
        String owedToken = token();
        pay(owedToken, pendingOrder(), id("req")).then().statusCode(200);
        db.execute("DELETE FROM queue_outbox");
        db.execute("""
                INSERT INTO queue_outbox (state, merchant_id, token, reply_to, correlation_id, status, code, replayed, body,
                    created_at)
                VALUES ('AWAITING', ?, ?, 'replies', 'c1', 0, NULL, 1, '', UTC_TIMESTAMP(3))""", MERCHANT, owedToken);
        db.execute("UPDATE idempotency_tokens SET expires_at = '2020-01-01 00:00:00'");

        run();

        assertEquals("COMPLETED", db.tokenState(MERCHANT, owedToken));
        db.execute("DELETE FROM queue_outbox");
    }
}
