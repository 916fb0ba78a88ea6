package io.payonce.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer.OrderAnnotation;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.payonce.support.Answer;
import io.payonce.support.Await;
import io.payonce.support.EachRequest;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayRequest;
import io.payonce.support.TcpProxy;
import io.payonce.support.WorkerAndSandbox;

/**
 * A worker W reaches MariaDB through a TCP proxy, which is cut for two seconds in the middle of a stream
 * of payments (connections reset, new ones refused) and then restored. The channel is the sandbox of a
 * second instance S on the database directly, so the channel works throughout. Nothing W acknowledged
 * may be lost, nothing may fail with a 500, and after a retry of every request with its own token every
 * order is PAID once with exactly one charge.
 *
 * <p>One outage serves every test of the class: they read, in order, what it left behind.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(OrderAnnotation.class)
class DatabaseOutageIT {

    private static final String MERCHANT = "merchant_outage";
    private static final int PAYMENTS = 45;
    private static final long EVERY_MS = 100;
    private static final long CUT_AT_MS = 1_000;
    private static final long CUT_FOR_MS = 2_000;
    private static final long CHARGE_MS = 150;
    /** Far below the client's 20 s: a lost connection is answered at once, not after a timeout. */
    private static final Duration RESET_ANSWER_BOUND = Duration.ofSeconds(5);

    private TcpProxy database;
    private WorkerAndSandbox instances;
    private PayClient channel;
    private PayClient client;
    private ScheduledExecutorService senders;

    private List<PayRequest> requests;
    private final Map<PayRequest, Answer> answers = new LinkedHashMap<>();
    private final Map<PayRequest, Books> afterOutage = new LinkedHashMap<>();
    private final Map<PayRequest, Answer> retries = new LinkedHashMap<>();

    @BeforeAll
    void cutTheDatabaseMidStream_thenRestoreIt() throws Exception {
        URI direct = URI.create(System.getenv().getOrDefault("QUARKUS_DATASOURCE_JDBC_URL",
                "jdbc:mariadb://127.0.0.1:3306/test").substring("jdbc:".length()));
        database = new TcpProxy(direct.getPort());
        String viaProxy = "//127.0.0.1:" + database.port() + direct.getPath();
        instances = WorkerAndSandbox.named("outage")
                .worker("QUARKUS_DATASOURCE_REACTIVE_URL", "mysql:" + viaProxy)
                .worker("QUARKUS_DATASOURCE_JDBC_URL", "jdbc:mariadb:" + viaProxy)
                .worker("PAYONCE_RECONCILE_MIN_AGE", "2s")
                .worker("PAYONCE_IDEMPOTENCY_LEASE", "4s");
        instances.start(MERCHANT);
        channel = instances.channel();
        client = instances.client();
        instances.warmUp();

        requests = channel.newRequests(PAYMENTS);
        channel.sandbox("ok", CHARGE_MS, PAYMENTS);
        senders = Executors.newScheduledThreadPool(PAYMENTS);
        Map<PayRequest, CompletableFuture<Answer>> sent = new LinkedHashMap<>();
        for (int i = 0; i < PAYMENTS; i++) {
            PayRequest request = requests.get(i);
            CompletableFuture<Answer> answer = new CompletableFuture<>();
            senders.schedule(() -> answer.complete(client.pay(request)), i * EVERY_MS, TimeUnit.MILLISECONDS);
            sent.put(request, answer);
        }
        senders.schedule(database::cut, CUT_AT_MS, TimeUnit.MILLISECONDS);
        senders.schedule(database::restore, CUT_AT_MS + CUT_FOR_MS, TimeUnit.MILLISECONDS);
        for (var answer : sent.entrySet()) {
            answers.put(answer.getKey(), answer.getValue().get(40, TimeUnit.SECONDS));
        }
        channel.sandbox("ok", 0, 0);

        awaitSettled(Duration.ofSeconds(20));
        requests.forEach(request -> afterOutage.put(request, channel.books(request.orderNo())));
        Map<PayRequest, CompletableFuture<Answer>> retrying = new LinkedHashMap<>();
        for (PayRequest request : requests) {
            retrying.put(request, client.payUntilFinalAsync(request, Duration.ofSeconds(20), senders));
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
        if (database != null) {
            database.close();
        }
    }

    @Test
    @Order(1)
    void theOutageWasFelt() {
        assertTrue(answers.values().stream().anyMatch(a -> a.status() != 200),
                "some payments ran into the outage: " + statuses());
    }

    /** The pool reconnects by itself: a payment sent half a second after the restore is served as usual. */
    @Test
    @Order(2)
    void afterTheRestore_newPaymentsArePaidAtOnce() {
        long settledAfterMs = CUT_AT_MS + CUT_FOR_MS + 500;
        assertForEach(requests.subList((int) (settledAfterMs / EVERY_MS) + 1, PAYMENTS), request -> assertEquals(200,
                answers.get(request).status(), () -> "paid: " + answers.get(request)));
    }

    /**
     * 200 paid, 503 nothing irreversible happened (retry), 202 charged but not yet settled, and 409
     * request_in_progress where the service could neither read the token nor tell from Redis that no other copy
     * holds it (so it cannot promise that nothing will be charged; retry): those are the answers to a database
     * outage. A 500, an unmapped status or a dropped connection is not.
     */
    @Test
    @Order(3)
    void everyAnswerDuringTheOutage_isPaidAcceptedOrRetryable() {
        assertForEach(requests, request -> {
            Answer answer = answers.get(request);
            assertTrue(Set.of(200, 202, 409, 503).contains(answer.status()), () -> "200, 202, 409 or 503: " + answer);
            if (answer.status() == 503 || answer.status() == 409) {
                assertTrue(answer.isRetryable(), () -> "a retryable refusal with Retry-After: " + answer);
            }
            if (answer.status() == 409) {
                assertTrue(answer.body().contains("request_in_progress"), answer::toString);
            }
        });
    }

    @Test
    @Order(4)
    void acknowledgedPayments_areKept() {
        assertForEach(requests, request -> {
            if (answers.get(request).status() != 200) {
                return;
            }
            Books books = afterOutage.get(request);
            assertEquals("PAID", books.orderStatus(), books::toString);
            assertEquals(1, books.charges(), books::toString);
            assertEquals("SUCCEEDED", books.paymentStatus(request.requestNo()), books::toString);
        });
    }

    /**
     * A 503 promises that nothing irreversible happened: no payment record was left behind, or, if the
     * database kept one it could not confirm, the retry with the same token still pays the order.
     */
    @Test
    @Order(5)
    void refusedPayments_leftNoRecordOrAreRetriedSuccessfully() {
        assertForEach(requests, request -> {
            if (answers.get(request).status() != 503) {
                return;
            }
            Books books = afterOutage.get(request);
            Answer retry = retries.get(request);
            // the third ending: the database kept a record it could not confirm, the charge never reached
            // the channel, and reconciliation settled it as unknown to the channel (contract section 6)
            boolean settledUnknown = retry.status() == 402 && "PENDING".equals(books.orderStatus());
            assertTrue(books.paymentsFor(request.requestNo()) == 0 || retry.status() == 200 || settledUnknown,
                    () -> "no record, a paid retry, or settled as unknown to the channel: " + books + ", retry "
                            + retry);
            assertEquals(0, books.charges(), () -> "a 503 charged nothing: " + books);
        });
    }

    /**
     * After the restore and a retry of every request with its own token, every order is PAID once with one
     * charge. The one other ending the contract allows: a 202 whose charge never reached the channel is
     * settled by reconciliation as unknown to the channel, FAILED, and its retry replays 402; the same
     * for a 503 whose opening transaction committed although the service could not confirm it.
     */
    @Test
    @Order(6)
    void afterRestoreAndRetries_everyOrderIsPaidOnceWithOneCharge() {
        assertForEach(requests, request -> {
            Answer first = answers.get(request);
            Answer retry = retries.get(request);
            Books books = channel.books(request.orderNo());
            assertEquals(1, books.payments().size(), books::toString);
            if (Set.of(202, 409, 503).contains(first.status()) && books.attempts() == 0 && retry.status() == 402) {
                assertEquals(402, retry.status(), () -> "never charged, settled FAILED: " + retry);
                assertEquals("PENDING", books.orderStatus(), books::toString);
                assertEquals(0, books.charges(), books::toString);
                return;
            }
            assertEquals(200, retry.status(), () -> "the retry is paid: " + retry + " (first answer: " + first + ")");
            if (first.status() == 200) {
                assertEquals(first.body(), retry.body(), "the retry replays the first answer byte for byte");
                assertTrue(retry.isReplay(), () -> "a replay: " + retry);
            }
            assertEquals("PAID", books.orderStatus(), books::toString);
            assertEquals(1, books.charges(), books::toString);
            assertEquals("SUCCEEDED", books.paymentStatus(request.requestNo()), books::toString);
        });
    }

    /**
     * The answer to the opening transaction's COMMIT is lost: the payment record and the order's move to
     * PAYING are committed, no charge was sent, and W cannot tell whether the COMMIT took. A 503 says
     * nothing happened and the same token may be retried; that is only true if the retry can pay. When W
     * cannot know, the answer the contract has for it is 202 (outcome unknown), and the retry then gets
     * whatever reconciliation settles.
     */
    @Test
    @Order(7)
    void answerToTheOpeningCommitLost_isA503OnlyIfTheRetryPays() throws InterruptedException {
        PayRequest request = channel.newRequest();
        database.cutAfterNext("COMMIT");
        Answer first = client.pay(request);
        database.restore();
        Books left = channel.books(request.orderNo());
        assertEquals(1, left.paymentsFor(request.requestNo()), () -> "the COMMIT took: " + left + " (answered " + first
                + ")");

        Answer retry = client.payUntilFinal(request, Duration.ofSeconds(15));
        Books settled = channel.books(request.orderNo());
        String story = "answered " + first + ", then " + left + "; retried: " + retry + ", then " + settled;
        if (left.attempts() > 0) {
            // the cut met the settling COMMIT instead (the charge was sent): an unknown outcome, which
            // reconciliation settles from the channel's record of the charge
            assertEquals(202, first.status(), () -> "charged, settlement unanswered: " + story);
            assertEquals(200, retry.status(), () -> "settled as the channel charged: " + story);
        } else if (first.status() == 503) {
            assertEquals(200, retry.status(), () -> "told 503 (nothing happened, retry), the retry pays: " + story);
        } else {
            assertEquals(202, first.status(), () -> "the outcome is unknown: " + story);
            assertTrue(retry.status() == 200 || retry.status() == 402, () -> "a final answer: " + story);
        }
        assertEquals(retry.status() == 200 ? "PAID" : "PENDING", settled.orderStatus(), story);
        assertEquals(retry.status() == 200 ? 1 : 0, settled.charges(), story);
    }

    /**
     * The connection is reset while the opening transaction's pipelined commands (BEGIN, the token's claim
     * and the order's read, sent together) are all in flight, unanswered: either the server got them and
     * drops the transaction with the connection ({@code forwarded}), or they were lost on the way. Nothing
     * was written either way, so the answer is a prompt 503 and the retry with the same token pays once.
     * A client-side rollback of such a transaction would wait for answers that never come and leave the
     * request unanswered (PaymentExecutor.rollBack).
     */
    @ParameterizedTest(name = "commands reached the server: {0}")
    @ValueSource(booleans = { true, false })
    @Order(8)
    void connectionResetWithTheOpeningCommandsInFlight_isAPrompt503_andTheRetryPaysOnce(boolean forwarded)
            throws InterruptedException {
        PayRequest request = channel.newRequest();
        if (forwarded) {
            database.cutAfterNext("BEGIN");
        } else {
            database.cutInsteadOfNext("BEGIN");
        }
        Answer first = client.pay(request);
        database.restore();
        Books left = channel.books(request.orderNo());
        String reset = "reset with BEGIN in flight (forwarded " + forwarded + "): " + first + "; " + left;
        assertEquals(503, first.status(), () -> "nothing irreversible happened: " + reset);
        assertTrue(first.isRetryable(), () -> "temporarily_unavailable with Retry-After: " + reset);
        assertTrue(first.elapsedMs() < RESET_ANSWER_BOUND.toMillis(), () -> "answered at once: " + reset);
        assertEquals(0, left.payments().size(), () -> "no record: " + reset);
        assertEquals("PENDING", left.orderStatus(), reset);

        Answer retry = client.payUntilFinal(request, Duration.ofSeconds(15));
        Books settled = channel.books(request.orderNo());
        assertEquals(200, retry.status(), () -> "the retry pays: " + retry + "; " + settled);
        assertEquals("PAID", settled.orderStatus(), settled::toString);
        assertEquals(1, settled.payments().size(), settled::toString);
        assertEquals(1, settled.charges(), settled::toString);
    }

    private String statuses() {
        return answers.values().stream().collect(Collectors.groupingBy(Answer::status, Collectors.counting())).toString();
    }

    /** Until every order is settled or the bound has passed; the tests judge what is left. */
    private void awaitSettled(Duration bound) {
        Await.upTo(bound, () -> requests.stream().allMatch(request -> channel.books(request.orderNo()).settled()));
    }

    private void assertForEach(List<PayRequest> some, EachRequest.Check check) {
        EachRequest.assertForEach(some, request -> request.orderNo() + " (sent at " + requests.indexOf(request) * EVERY_MS
                + " ms; first answer " + answers.get(request) + "; retry " + retries.get(request) + ")", check);
    }
}
