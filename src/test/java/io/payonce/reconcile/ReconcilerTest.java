package io.payonce.reconcile;

import static io.payonce.Fixtures.AMOUNT;
import static io.payonce.Fixtures.MERCHANT;
import static io.payonce.Fixtures.as;
import static io.payonce.Fixtures.id;
import static io.payonce.Fixtures.pay;
import static io.payonce.Fixtures.pendingOrder;
import static io.payonce.Fixtures.token;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.Concurrently;
import io.payonce.Fixtures;
import io.payonce.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.SqlConnection;
import io.vertx.mutiny.sqlclient.Transaction;
import io.vertx.mutiny.sqlclient.Tuple;

/** Recovery: payments left PROCESSING, dead token leases, expired tokens. The job is run by hand. */
@QuarkusTest
class ReconcilerTest {

    private static final Duration RUN = Duration.ofSeconds(20);

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

    /** An unknown channel outcome, as old as reconciliation requires. */
    private String[] unknownOutcome() {
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        Fixtures.sandbox("timeout_after_accept", 0, 1);
        pay(token, orderNo, requestNo).then().statusCode(202);
        ageProcessingPayments();
        return new String[] { orderNo, token, requestNo };
    }

    private void ageProcessingPayments() {
        db.execute("UPDATE payments SET created_at = created_at - INTERVAL 1 HOUR WHERE status = 'PROCESSING'");
    }

    private Reconciler.Report run() {
        return reconciler.runOnce().await().atMost(RUN);
    }

    @Test
    void chargeSucceededAtChannel_settlesPaid_andDuplicatesGetThe200() {
        String[] p = unknownOutcome();

        Reconciler.Report report = run();

        assertEquals(1, report.settled());
        assertEquals("PAID", Fixtures.orderStatus(MERCHANT, p[0]));
        as(MERCHANT).get("/payments/" + p[2]).then().body("status", equalTo("SUCCEEDED"));
        pay(p[1], p[0], p[2]).then().statusCode(200)
                .header("Idempotent-Replayed", "true")
                .body("status", equalTo("PAID"))
                .body("request_no", equalTo(p[2]));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, p[0]));
        assertEquals(1, Fixtures.ledgerAttempts(MERCHANT, p[0]), "reconciliation queried, it never charged");
    }

    @Test
    void unknownToChannel_settlesFailed_orderPayableAgain_stored402() {
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        // a process that died after its payment record committed and before the charge left
        Fixtures.sandbox("timeout_after_accept", 0, 1);
        pay(token, orderNo, requestNo).then().statusCode(202);
        db.execute("DELETE FROM sandbox_charges WHERE request_no = ?", requestNo);
        ageProcessingPayments();

        run();

        as(MERCHANT).get("/payments/" + requestNo).then().body("status", equalTo("FAILED"));
        assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, orderNo));
        pay(token, orderNo, requestNo).then().statusCode(402).body("code", equalTo("payment_declined"));
        pay(token(), orderNo, id("req")).then().statusCode(200);
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, orderNo));
    }

    @Test
    void tooYoungPayment_isLeftToItsOwner() {
        String orderNo = pendingOrder();
        Fixtures.sandbox("timeout_after_accept", 0, 1);
        String requestNo = id("req");
        pay(token(), orderNo, requestNo).then().statusCode(202);

        Reconciler.Report report = run();

        assertEquals(0, report.settled() + report.postponed());
        as(MERCHANT).get("/payments/" + requestNo).then().body("status", equalTo("PROCESSING"));
    }

    @Test
    void duplicateWaitingDuringReconciliation_isAnsweredWithTheSettledResult() throws Exception {
        String[] p = unknownOutcome();
        CompletableFuture<Response> waiting = CompletableFuture.supplyAsync(() -> as(MERCHANT)
                .header("Idempotency-Key", p[1]).header("Prefer", "wait=8")
                .body(Fixtures.payBody(p[0], p[2], AMOUNT)).post("/pay"));
        Thread.sleep(500);

        run();

        Response answer = waiting.get(15, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(200, answer.statusCode());
        assertEquals("PAID", answer.path("status"));
    }

    @Test
    void reconcilersOnSeveralInstancesAtOnce_settleEachPaymentOnce() {
        String[] a = unknownOutcome();
        String[] b = unknownOutcome();

        List<Reconciler.Report> reports = Concurrently.all(4, RUN, (g, c) -> run());

        assertEquals(2, reports.stream().mapToInt(Reconciler.Report::settled).sum());
        for (String[] p : List.of(a, b)) {
            assertEquals("PAID", Fixtures.orderStatus(MERCHANT, p[0]));
            assertEquals(1, Fixtures.ledgerCharges(MERCHANT, p[0]));
        }
    }

    @Test
    void deadLeaseWithoutPayment_isReleased_andTheRetryExecutes() {
        String orderNo = pendingOrder();
        String requestNo = id("req");
        // an owner that claimed the token and died before its payment record existed
        String token = inProgressToken("- INTERVAL 1 MINUTE", orderNo, requestNo);
        as(MERCHANT).header("Idempotency-Key", token).header("Prefer", "wait=0")
                .body(Fixtures.payBody(orderNo, requestNo, AMOUNT)).post("/pay").then().statusCode(409);

        Reconciler.Report report = run();

        assertEquals(1, report.leasesReleased());
        pay(token, orderNo, requestNo).then().statusCode(200).body("status", equalTo("PAID"));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, orderNo));
    }

    /**
     * The deadlock the benchmark found: a settlement holds a live token's row and index entry while the
     * release of dead leases runs. The release must neither wait for that lock nor touch the live token.
     * A locking scan of the (state, lease_until) index, as the release once was, waits here for the open
     * transaction (innodb_lock_wait_timeout, 50 s by default) and fails the bound.
     */
    @Test
    void releasingDeadLeases_doesNotWaitForALiveTokenBeingSettled() {
        String dead = inProgressToken("- INTERVAL 1 MINUTE", id("order"), id("req"));
        String live = inProgressToken("+ INTERVAL 1 MINUTE", id("order"), id("req"));
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

    /** A token claimed for the request without a payment record, its lease ending {@code leaseFromNow} (SQL). */
    private String inProgressToken(String leaseFromNow, String orderNo, String requestNo) {
        String token = token();
        db.execute("INSERT INTO idempotency_tokens (merchant_id, token, state, fingerprint, request_no, lease_until,"
                + " expires_at) VALUES (?, ?, 'IN_PROGRESS', ?, ?, UTC_TIMESTAMP(3) " + leaseFromNow + ","
                + " UTC_TIMESTAMP(3) + INTERVAL 1 DAY)", MERCHANT, token,
                io.payonce.idempotency.Fingerprint.of(MERCHANT, orderNo, requestNo, AMOUNT, null), requestNo);
        return token;
    }

    @Test
    void deadLeaseWithPayment_isNotReleased_reconciliationSettlesIt() {
        String[] p = unknownOutcome();
        db.execute("UPDATE idempotency_tokens SET lease_until = UTC_TIMESTAMP(3) - INTERVAL 1 MINUTE WHERE token = ?", p[1]);

        Reconciler.Report report = run();

        assertEquals(0, report.leasesReleased());
        assertEquals("COMPLETED", db.tokenState(MERCHANT, p[1]));
        assertEquals("PAID", Fixtures.orderStatus(MERCHANT, p[0]));
    }

    @Test
    void expiredTokens_arePurged_inProgressOnesKept() {
        for (int i = 0; i < 3; i++) {
            pay(token(), pendingOrder(), id("req")).then().statusCode(200);
        }
        String[] p = unknownOutcome();
        db.execute("UPDATE idempotency_tokens SET expires_at = '2020-01-01 00:00:00'");
        db.execute("UPDATE payments SET created_at = UTC_TIMESTAMP(3) WHERE request_no = ?", p[2]);

        Reconciler.Report report = run();

        assertTrue(report.tokensPurged() >= 3, report.toString());
        assertEquals("IN_PROGRESS", db.tokenState(MERCHANT, p[1]));
    }
}
