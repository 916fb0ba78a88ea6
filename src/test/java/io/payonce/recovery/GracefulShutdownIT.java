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
import io.payonce.support.Operations;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayRequest;
import io.payonce.support.Tables;
import io.payonce.support.WorkerAndSandbox;

/**
 * SIGTERM to a worker W while slow payments are in flight, as an orchestrator stops an instance. The
 * configuration promises: readiness goes DOWN for {@code quarkus.shutdown.delay} (1 s) while requests are
 * still served, waiting duplicates are told to retry, and owners finish within
 * {@code quarkus.shutdown.timeout} (10 s). Then W is started again, every request is retried with its
 * token, and every order must be PAID once with one charge and nothing left half-written.
 *
 * <p>One shutdown serves every test of the class: they read, in order, what it left behind.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(OrderAnnotation.class)
class GracefulShutdownIT {

    private static final String MERCHANT = "merchant_shutdown";
    private static final long SLOW_CHARGE_MS = 1500;
    private static final Duration SHUTDOWN_DELAY = Duration.ofSeconds(1);
    private static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(10);
    /** A JVM needs a moment beyond the shutdown timeout to stop its last parts. */
    private static final Duration EXIT_BOUND = SHUTDOWN_DELAY.plus(SHUTDOWN_TIMEOUT).plusSeconds(3);

    private WorkerAndSandbox instances;
    private AppProcess worker;
    private PayClient channel;
    private PayClient client;
    private ExecutorService senders;

    private List<PayRequest> inFlight;
    /** Sent while W is in its shutdown delay, and after it. */
    private List<PayRequest> late;
    private final Map<PayRequest, Answer> firstAnswers = new LinkedHashMap<>();
    private Answer duplicate;
    private boolean exited;
    private long exitMs;
    private String exit;
    private final Map<PayRequest, Answer> retries = new LinkedHashMap<>();

    @BeforeAll
    void terminateWorkerMidPayments_thenRestartIt() throws Exception {
        // the channel timeout above the slow charge, so the owners in flight get its answer, and below the
        // 2 s min-age of the restart, as the service requires
        instances = WorkerAndSandbox.named("shutdown").worker("PAYONCE_IDEMPOTENCY_LEASE", "4s")
                .worker("PAYONCE_CHANNEL_TIMEOUT", "1900ms");
        instances.start(MERCHANT);
        worker = instances.worker();
        channel = instances.channel();
        client = instances.client();
        instances.warmUp();

        inFlight = client.newRequests(5);
        late = client.newRequests(2);
        senders = Executors.newFixedThreadPool(16);
        Map<PayRequest, CompletableFuture<Answer>> sent = new LinkedHashMap<>();
        channel.sandbox("ok", SLOW_CHARGE_MS, inFlight.size());
        inFlight.forEach(request -> sent.put(request, send(request)));
        awaitAttempts(inFlight);
        CompletableFuture<Answer> copy = send(inFlight.get(0));
        Await.until("the copy to wait for the first execution", Duration.ofSeconds(5),
                () -> Operations.metricSum(worker, "payonce_idempotency_waiters") >= 1);

        long sigterm = System.nanoTime();
        worker.terminate();
        // the late requests are timed against the shutdown delay: one inside it, one after it
        Thread.sleep(300);
        sent.put(late.get(0), send(late.get(0))); // inside the shutdown delay
        Thread.sleep(1_000);
        sent.put(late.get(1), send(late.get(1))); // after the delay, while in-flight requests drain
        exited = worker.awaitExit(EXIT_BOUND);
        exitMs = (System.nanoTime() - sigterm) / 1_000_000;
        exit = exited ? "exited with " + worker.exitValue() : "not exited";

        for (var answer : sent.entrySet()) {
            firstAnswers.put(answer.getKey(), answer.getValue().get(25, TimeUnit.SECONDS));
        }
        duplicate = copy.get(25, TimeUnit.SECONDS);

        if (!exited) {
            worker.kill();
        }
        worker.env("PAYONCE_RECONCILE_MIN_AGE", "2s").start().awaitReady();
        awaitSettled(all(), Duration.ofSeconds(20));
        Map<PayRequest, CompletableFuture<Answer>> retrying = new LinkedHashMap<>();
        for (PayRequest request : all()) {
            retrying.put(request, client.payUntilFinalAsync(request, Duration.ofSeconds(15), senders));
        }
        for (var retry : retrying.entrySet()) {
            retries.put(retry.getKey(), retry.getValue().get(40, TimeUnit.SECONDS));
        }
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
    void exitsWithinTheShutdownTimeout() {
        assertTrue(exited, "W exited within shutdown delay + timeout + 3 s (" + EXIT_BOUND + "): " + exit + " "
                + exitMs + " ms after SIGTERM");
        assertTrue(exitMs < EXIT_BOUND.toMillis(), exit + " " + exitMs + " ms after SIGTERM");
    }

    /** An owner is past the point of no return: it finishes its payment and answers, whatever the signal. */
    @Test
    @Order(2)
    void inFlightOwners_finishWithTheirFinalAnswer() {
        assertForEach(inFlight, request -> {
            Answer answer = firstAnswers.get(request);
            assertEquals(200, answer.status(), () -> "the in-flight owner finished: " + answer);
            assertEquals("PAID", answer.field("status"));
        });
    }

    /** Waiting duplicates are told to retry (409 request_in_progress with Retry-After), or get the owner's answer. */
    @Test
    @Order(3)
    void waitingDuplicate_isToldToRetryOrGetsTheOwnersAnswer() {
        Answer owner = firstAnswers.get(inFlight.get(0));
        boolean toldToRetry = duplicate.status() == 409 && "request_in_progress".equals(duplicate.code())
                && duplicate.retryAfter() != null;
        boolean ownersAnswer = duplicate.status() == owner.status() && duplicate.body().equals(owner.body());
        assertTrue(toldToRetry || ownersAnswer, "409 request_in_progress with Retry-After, or the owner's answer: "
                + duplicate + " (owner: " + owner + ")");
    }

    /**
     * A request that arrives while W stops is either served in full (during the delay) or refused in a way
     * a client retries: a 503 with Retry-After, or a connection that never opened. Never cut off halfway.
     */
    @Test
    @Order(4)
    void requestsArrivingDuringShutdown_areServedOrRefusedRetryably() {
        assertForEach(late, request -> {
            Answer answer = firstAnswers.get(request);
            boolean served = answer.status() == 200;
            boolean refused = answer.status() == 503 && answer.retryAfter() != null;
            // a connection that reaches the listener as it closes is accepted and dropped at once (reset):
            // like a refused one it carries no answer, and the retry below shows nothing was half done
            boolean neverServed = !answer.answered() && (answer.transportError().contains("ConnectException")
                    || answer.transportError().contains("Connection reset"));
            assertTrue(served || refused || neverServed, () -> "served, refused retryably or not connected: " + answer);
        });
    }

    @Test
    @Order(5)
    void afterRestartAndRetries_everyOrderIsPaidOnceAndNothingIsHalfWritten() {
        assertForEach(all(), request -> {
            Answer first = firstAnswers.get(request);
            Answer retry = retries.get(request);
            assertEquals(200, retry.status(), () -> "the retry is paid: " + retry + " (first answer: " + first + ")");
            if (first.status() == 200) {
                assertEquals(first.body(), retry.body(), "the retry replays the first answer byte for byte");
                assertTrue(retry.isReplay(), () -> "a replay: " + retry);
            }
            Books books = channel.books(request.orderNo());
            assertEquals("PAID", books.orderStatus(), books::toString);
            assertEquals(1, books.charges(), books::toString);
            assertEquals(1, books.payments().size(), books::toString);
            assertEquals("SUCCEEDED", books.paymentStatus(request.requestNo()), books::toString);
            assertEquals("COMPLETED", Tables.tokenState(MERCHANT, request.token()), "the token holds its answer");
        });
    }

    private List<PayRequest> all() {
        List<PayRequest> all = new ArrayList<>(inFlight);
        all.addAll(late);
        return all;
    }

    private CompletableFuture<Answer> send(PayRequest request) {
        return CompletableFuture.supplyAsync(() -> client.pay(request), senders);
    }

    private void awaitAttempts(List<PayRequest> requests) {
        Await.until("the slow charges to reach the channel", Duration.ofSeconds(3),
                () -> requests.stream().allMatch(request -> channel.ledger(request.orderNo()).attempts() == 1));
    }

    /** Until every order is settled or the bound has passed; the tests judge what is left. */
    private void awaitSettled(List<PayRequest> requests, Duration bound) {
        Await.upTo(bound, () -> requests.stream().allMatch(request -> channel.books(request.orderNo()).settled()));
    }

    private void assertForEach(List<PayRequest> requests, EachRequest.Check check) {
        EachRequest.assertForEach(requests, request -> request.orderNo() + " (first answer " + firstAnswers.get(request)
                + "; retry " + retries.get(request) + ")", check);
    }
}
