package io.payonce.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer.OrderAnnotation;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.EachRequest;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayClient.Ledger;
import io.payonce.support.PayRequest;
import io.payonce.support.Tables;
import io.payonce.support.WorkerAndSandbox;

/**
 * A worker instance W is killed with SIGKILL while payments are at three stages: (c) charged at the
 * channel, the answer not back yet; (b) the charge under way at the channel; (a) just sent to W. The
 * channel is the sandbox of a second instance S, which is never killed and keeps one ledger. W is
 * started again, reconciles, and every order must then be PAID with exactly one charge or PENDING with
 * none, and a retry of every original request must get the final answer those books imply.
 *
 * <p>One crash serves every test of the class: they read, in order, what it left behind.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(OrderAnnotation.class)
class CrashRecoveryIT {

    private static final String MERCHANT = "merchant_crash";
    private static final Duration MIN_AGE = Duration.ofSeconds(2);
    private static final Duration LEASE = Duration.ofSeconds(4);
    private static final long SLOW_CHARGE_MS = 1500;
    /** How far into a slow charge W dies: well inside it, whatever the scheduling noise. */
    private static final long INTO_THE_CHARGE_MS = 400;
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(20);

    private WorkerAndSandbox instances;
    private AppProcess worker;
    private PayClient channel;
    private PayClient client;
    private ExecutorService senders;

    private List<PayRequest> justSent;
    private List<PayRequest> duringCharge;
    private List<PayRequest> afterCharge;
    private final Map<PayRequest, Answer> beforeKill = new LinkedHashMap<>();
    private final Map<PayRequest, Books> afterCrash = new LinkedHashMap<>();
    private final Map<PayRequest, Books> afterRecovery = new LinkedHashMap<>();
    private final Map<PayRequest, String> tokenAfterCrash = new LinkedHashMap<>();
    private long killedAfterMs;
    private long settledAfterMs;

    @BeforeAll
    void killWorkerMidPayments_thenRestartIt() throws Exception {
        // until the crash W reconciles nothing (default min-age): the payments it leaves must be a dead
        // process's, not ones its own reconciler settled while it was still waiting for the channel
        instances = WorkerAndSandbox.named("crash").worker("PAYONCE_IDEMPOTENCY_LEASE", LEASE.toSeconds() + "s");
        instances.start(MERCHANT);
        worker = instances.worker();
        channel = instances.channel();
        client = instances.client();
        warmUp();

        afterCharge = client.newRequests(3);
        duringCharge = client.newRequests(4);
        justSent = client.newRequests(4);
        senders = Executors.newFixedThreadPool(16);
        Map<PayRequest, CompletableFuture<Answer>> inFlight = new LinkedHashMap<>();
        long firstSent = System.nanoTime();

        // (c) recorded at the channel at once, answered only after W's channel timeout
        channel.sandbox("timeout_after_accept", 0, afterCharge.size());
        afterCharge.forEach(request -> inFlight.put(request, send(request)));
        awaitLedger(afterCharge, ledger -> ledger.charges() == 1, "the late charges to be recorded");

        // (b) arrived at the channel, which takes 1.5 s to charge
        channel.sandbox("ok", SLOW_CHARGE_MS, duringCharge.size() + justSent.size());
        duringCharge.forEach(request -> inFlight.put(request, send(request)));
        awaitLedger(duringCharge, ledger -> ledger.attempts() == 1, "the slow charges to arrive");
        // W dies this far into the slow charges
        Thread.sleep(INTO_THE_CHARGE_MS);

        // (a) on their way to W, sent 70, 30, 10 and 0 ms before it dies, so they die at different early steps
        long[] pauses = { 40, 20, 10, 0 };
        for (int i = 0; i < justSent.size(); i++) {
            inFlight.put(justSent.get(i), send(justSent.get(i)));
            Thread.sleep(pauses[i]);
        }
        worker.kill();
        killedAfterMs = (System.nanoTime() - firstSent) / 1_000_000;

        for (var sent : inFlight.entrySet()) {
            beforeKill.put(sent.getKey(), sent.getValue().get(5, TimeUnit.SECONDS));
        }
        all().forEach(request -> afterCrash.put(request, channel.books(request.orderNo())));
        all().forEach(request -> tokenAfterCrash.put(request, Tables.tokenState(MERCHANT, request.token())));

        worker.env("PAYONCE_RECONCILE_MIN_AGE", MIN_AGE.toSeconds() + "s").start().awaitReady();
        long restarted = System.nanoTime();
        awaitSettled(all(), SETTLE_BOUND);
        settledAfterMs = (System.nanoTime() - restarted) / 1_000_000;
        all().forEach(request -> afterRecovery.put(request, channel.books(request.orderNo())));
        channel.sandbox("ok", 0, 0);
    }

    @AfterAll
    void stop() throws InterruptedException {
        if (senders != null) {
            senders.shutdownNow();
        }
        if (instances != null) {
            instances.close();
        }
    }

    @Test
    @Order(1)
    void afterRecovery_everyOrderIsPaidWithOneChargeOrPendingWithNone() {
        assertForEach(all(), request -> {
            Books books = afterRecovery.get(request);
            assertTrue(books.settled(), "nothing left PAYING or PROCESSING: " + books);
            assertTrue(books.paymentsFor(request.requestNo()) <= 1, "at most one payment record: " + books);
            boolean paidOnce = "PAID".equals(books.orderStatus()) && books.charges() == 1
                    && "SUCCEEDED".equals(books.paymentStatus(request.requestNo()));
            boolean notCharged = "PENDING".equals(books.orderStatus()) && books.charges() == 0
                    && !"SUCCEEDED".equals(books.paymentStatus(request.requestNo()));
            assertTrue(paidOnce || notCharged, "PAID with one charge or PENDING with none: " + books);
        });
    }

    @Test
    @Order(2)
    void answeredBeforeTheCrash_isWhatTheBooksSay() {
        // W died before any charge was answered, so nothing should have been acknowledged; if one was, it holds
        assertForEach(all(), request -> {
            Answer answer = beforeKill.get(request);
            if (answer.status() == 200) {
                assertEquals("PAID", afterRecovery.get(request).orderStatus(), "an acknowledged payment is kept");
            }
        });
    }

    /**
     * A token is left IN_PROGRESS by the crash either with a payment record behind it (reconciliation
     * settles that and completes the token) or without one (its lease runs out and it is released). Once
     * both have had their time, no token of the crash is still in progress, so no retry can get a 202.
     */
    @Test
    @Order(3)
    void afterReconciliationAndLeaseExpiry_noTokenIsLeftInProgress() {
        // bounded; the checks below judge whatever is left in progress
        Await.upTo(LEASE.plusSeconds(3), () -> all().stream()
                .noneMatch(request -> "IN_PROGRESS".equals(Tables.tokenState(MERCHANT, request.token()))));
        assertForEach(all(), request -> {
            String state = Tables.tokenState(MERCHANT, request.token());
            Books books = afterRecovery.get(request);
            if (books.paymentsFor(request.requestNo()) == 1) {
                assertEquals("COMPLETED", state, () -> "settled by reconciliation: " + books);
            } else {
                assertTrue(state == null || "AVAILABLE".equals(state), () -> "no payment record, released or never claimed: " + state
                        + " (right after the crash: " + tokenAfterCrash.get(request) + ")");
            }
        });
    }

    @Test
    @Order(4)
    void chargedBeforeTheCrash_isPaidByReconciliation() {
        assertForEach(afterCharge, request -> {
            Books books = afterRecovery.get(request);
            assertEquals("PAID", books.orderStatus(), () -> "the channel holds its charge: " + books);
            assertEquals(1, books.charges(), () -> books.toString());
            assertEquals("SUCCEEDED", books.paymentStatus(request.requestNo()), () -> books.toString());
        });
    }

    /**
     * A provider completes a charge it has accepted whatever its caller does, and the sandbox says it
     * behaves like one; so a worker dying in the middle of the call still leaves a charge, which
     * reconciliation must find and turn into a PAID order.
     */
    @Test
    @Order(5)
    void killedDuringTheChannelCall_theChannelCompletesTheChargeAndReconciliationPaysIt() {
        assertForEach(duringCharge, request -> {
            Books books = afterRecovery.get(request);
            assertEquals(1, books.charges(), () -> "the charge under way when W died was completed by the channel: "
                    + books + " (right after the crash: " + afterCrash.get(request) + ")");
            assertEquals("PAID", books.orderStatus(), () -> books.toString());
        });
    }

    /**
     * The same request again, same token and body, to the restarted W. The contract implies the answer:
     * PAID, the stored 200 replayed; PENDING behind a FAILED payment (reconciliation found no charge), the
     * stored 402 payment_declined replayed; PENDING with no payment record (W died before it wrote one,
     * and the dead lease was released), a fresh execution that pays. Never a 202 or a 409: by now every
     * payment is settled and every lease has run out. A second copy then gets the first copy's answer.
     */
    @Test
    @Order(6)
    void retryOfEveryRequest_getsTheFinalAnswerItsBooksImply() throws Exception {
        Map<PayRequest, CompletableFuture<Answer>> retries = new LinkedHashMap<>();
        all().forEach(request -> retries.put(request, send(request)));
        Map<PayRequest, Answer> answers = new LinkedHashMap<>();
        for (var retry : retries.entrySet()) {
            answers.put(retry.getKey(), retry.getValue().get(30, TimeUnit.SECONDS));
        }
        assertForEach(all(), request -> {
            Books books = afterRecovery.get(request);
            Answer retry = answers.get(request);
            String paymentStatus = books.paymentStatus(request.requestNo());
            if ("PAID".equals(books.orderStatus())) {
                assertEquals(200, retry.status(), () -> "paid: the stored 200 is replayed, got " + retry);
                assertTrue(retry.isReplay(), () -> "a replay: " + retry);
                assertEquals("PAID", retry.field("status"));
                assertEquals(channel.channelTxnId(request.requestNo()), retry.field("channel_txn_id"),
                        "the answer names the channel's transaction");
            } else if ("FAILED".equals(paymentStatus)) {
                assertEquals(402, retry.status(), () -> "settled FAILED: the stored 402 is replayed, got " + retry);
                assertEquals("payment_declined", retry.code());
                assertTrue(retry.isReplay(), () -> "a replay: " + retry);
            } else {
                assertEquals(200, retry.status(), () -> "no payment record: a fresh execution pays, got " + retry);
                assertEquals("PAID", retry.field("status"));
            }
            Answer again = client.pay(request);
            assertEquals(retry.status(), again.status(), () -> "a second copy gets the same answer: " + again);
            assertEquals(retry.body(), again.body(), "byte for byte");
            assertTrue(again.isReplay(), () -> "a replay: " + again);

            Books finally_ = channel.books(request.orderNo());
            assertEquals(retry.status() == 200 ? "PAID" : "PENDING", finally_.orderStatus(), finally_::toString);
            assertEquals(retry.status() == 200 ? 1 : 0, finally_.charges(), finally_::toString);
            assertEquals(1, finally_.paymentsFor(request.requestNo()), finally_::toString);
        });
    }

    /** One payment end to end and its books, so the crash finds both processes past their first, slow requests. */
    private void warmUp() {
        channel.books(instances.warmUp().orderNo());
    }

    private List<PayRequest> all() {
        List<PayRequest> all = new ArrayList<>(afterCharge);
        all.addAll(duringCharge);
        all.addAll(justSent);
        return all;
    }

    private String stage(PayRequest request) {
        return afterCharge.contains(request) ? "(c) after charge" : duringCharge.contains(request) ? "(b) during charge"
                : "(a) just sent";
    }

    private CompletableFuture<Answer> send(PayRequest request) {
        return CompletableFuture.supplyAsync(() -> client.pay(request), senders);
    }

    private void awaitLedger(List<PayRequest> requests, Predicate<Ledger> condition, String what) {
        Await.until(what, Duration.ofSeconds(3),
                () -> requests.stream().allMatch(request -> condition.test(channel.ledger(request.orderNo()))));
    }

    /** Until every order is settled or the bound has passed; the tests judge what is left. */
    private void awaitSettled(List<PayRequest> requests, Duration bound) {
        Await.upTo(bound, () -> requests.stream().allMatch(request -> channel.books(request.orderNo()).settled()));
    }

    /** A payment's whole story, for the message of any check of it that fails. */
    private String story(PayRequest request) {
        return stage(request) + " " + request.orderNo() + " (W killed " + killedAfterMs + " ms after the first payment"
                + " was sent; before the kill: " + beforeKill.get(request) + "; after the crash: " + afterCrash.get(request)
                + ", token " + tokenAfterCrash.get(request) + "; recovered " + settledAfterMs + " ms after W was ready"
                + " again: " + afterRecovery.get(request) + ")";
    }

    private void assertForEach(List<PayRequest> requests, EachRequest.Check check) {
        EachRequest.assertForEach(requests, this::story, check);
    }
}
