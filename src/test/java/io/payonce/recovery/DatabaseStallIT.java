package io.payonce.recovery;

import static io.payonce.support.TcpProxy.daemon;
import static io.payonce.support.TcpProxy.quietly;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer.OrderAnnotation;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.function.Executable;

import io.payonce.support.Answer;
import io.payonce.support.Await;
import io.payonce.support.Operations;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayRequest;
import io.payonce.support.Tables;
import io.payonce.support.TcpProxy;
import io.payonce.support.WorkerAndSandbox;

/**
 * MySQL stops answering a worker W without closing its connections, and W must still answer on time and
 * finish what it started. W reaches MariaDB through a {@link TcpProxy} (black hole, lost COMMIT answer)
 * and, behind it, a {@link SilencingRelay} (connections that never answer again); its channel is the
 * sandbox of a second instance S on the database directly, so the channel and the books work throughout.
 *
 * <p>One W serves the class; each test restores the database path before the next.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(OrderAnnotation.class)
class DatabaseStallIT {

    private static final String MERCHANT = "merchant_stall";
    /** W's channel timeout, set here because the bounds below are counted from it. */
    private static final Duration CHANNEL_TIMEOUT = Duration.ofSeconds(1);
    /**
     * Above the channel timeout, as the service requires, and long enough that the silence of
     * {@link #reconciliationRunStrandedOnASilentConnection_doesNotStopLaterRuns} ends before W may
     * reconcile that test's payment: a run it strands can then have claimed nothing.
     */
    private static final Duration MIN_AGE = Duration.ofSeconds(4);
    private static final Duration LEASE = Duration.ofSeconds(4);
    /**
     * Min-age, a reconciliation run every second, a few runs that give up on a silent connection first (a
     * pipelined pool may lease one connection to several statements), and room for a slow machine.
     */
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(20);
    /** A marker no statement contains: arming it takes back a cut that never fired. */
    private static final String NO_STATEMENT = "DatabaseStallIT: no statement contains this";

    private SilencingRelay relay;
    private TcpProxy database;
    private WorkerAndSandbox instances;
    private PayClient channel;
    private PayClient client;
    private ExecutorService senders;
    private ScheduledExecutorService timer;

    @BeforeAll
    void startWorkerBehindTheProxies() throws Exception {
        String jdbcDirect = System.getenv().getOrDefault("QUARKUS_DATASOURCE_JDBC_URL", "jdbc:mariadb://127.0.0.1:3306/test");
        URI direct = URI.create(jdbcDirect.substring("jdbc:".length()));
        relay = new SilencingRelay(direct.getPort());
        database = new TcpProxy(relay.port());
        String viaProxy = "//127.0.0.1:" + database.port() + direct.getPath();
        instances = WorkerAndSandbox.named("stall")
                .worker("QUARKUS_DATASOURCE_REACTIVE_URL", "mysql:" + viaProxy)
                // Flyway's JDBC connection goes direct: a COMMIT of its pool's must not be the one the
                // proxy is told to cut after
                .worker("QUARKUS_DATASOURCE_JDBC_URL", jdbcDirect)
                .worker("PAYONCE_CHANNEL_TIMEOUT", CHANNEL_TIMEOUT.toMillis() + "ms")
                .worker("PAYONCE_RECONCILE_MIN_AGE", MIN_AGE.toSeconds() + "s")
                .worker("PAYONCE_IDEMPOTENCY_LEASE", LEASE.toSeconds() + "s");
        instances.start(MERCHANT);
        channel = instances.channel();
        client = instances.client();
        instances.warmUp();
        senders = Executors.newFixedThreadPool(8);
        timer = Executors.newSingleThreadScheduledExecutor();
    }

    @AfterEach
    void healTheDatabasePath() {
        database.restore();
        channel.sandbox("ok", 0, 0);
    }

    @AfterAll
    void stop() throws InterruptedException {
        if (senders != null) {
            senders.shutdownNow();
        }
        if (timer != null) {
            timer.shutdownNow();
        }
        if (instances != null) {
            instances.close();
        }
        if (database != null) {
            database.close();
        }
        if (relay != null) {
            relay.close();
        }
    }

    /**
     * The opening transaction's COMMIT reaches MariaDB and commits, and its answer is lost with the
     * connection. W cannot know whether the payment record exists; it does, so the request must end PAID
     * with one charge: either W looks again and charges, or it answers 202 and reconciliation, told by the
     * channel that no charge arrived, sends the same charge. A 402 would be a decline the channel never
     * gave.
     *
     * <p>First in the class, while W has no payment to reconcile: the cut must meet this COMMIT, and W's
     * reconciler writes in autocommit statements, with no COMMIT of its own.
     */
    @Test
    @Order(1)
    void unansweredOpeningCommit_isNeverADecline_andThePaymentCompletes() throws Exception {
        // given: a payment whose opening COMMIT will commit unanswered
        PayRequest request = client.newRequest();
        database.cutAfterNext("COMMIT");

        // when: it is paid; the connection is cut right after the COMMIT went through, and the database is
        // reachable again shortly after, so a fresh connection can look
        CompletableFuture<Answer> sent = CompletableFuture.supplyAsync(() -> client.pay(request), senders);
        try {
            awaitBooks(request, books -> books.paymentsFor(request.requestNo()) == 1, Duration.ofSeconds(5),
                    "the opening transaction to commit");
            // the database stays out of reach a moment longer, as a real cut does
            Thread.sleep(200);
        } finally {
            database.restore();
            database.cutAfterNext(NO_STATEMENT);
        }
        Answer first = sent.get(20, TimeUnit.SECONDS);
        Books settled = awaitSettled(request);
        Answer retry = client.pay(request);

        // then: paid once, and every final answer says so
        assertAll("opening COMMIT unanswered: " + first + "; " + settled + "; retry " + retry,
                () -> assertNotEquals(402, first.status(), () -> "no decline: " + first),
                () -> assertTrue(first.status() == 200 || first.status() == 202,
                        () -> "the record exists: paid, or the outcome unknown: " + first),
                () -> assertEquals("PAID", settled.orderStatus(), settled::toString),
                () -> assertEquals(1, settled.charges(), settled::toString),
                () -> assertEquals(1, settled.paymentsFor(request.requestNo()), settled::toString),
                () -> assertEquals("SUCCEEDED", settled.paymentStatus(request.requestNo()), settled::toString),
                () -> assertEquals("COMPLETED", Tables.tokenState(MERCHANT, request.token())),
                () -> assertEquals(200, retry.status(), () -> "the final answer: " + retry),
                () -> assertTrue(retry.isReplay(), () -> "a replay: " + retry),
                () -> {
                    if (first.status() == 200) {
                        assertEquals(first.body(), retry.body(), "byte for byte");
                    }
                });
    }

    /**
     * MySQL black-holed (nothing forwarded either way, nothing closed) while the owner's charge runs and
     * duplicates wait for it. Every wait is bounded: the contract gives a duplicate its wait bound plus at
     * most a second, and the owner its channel timeout plus a few seconds; the hang lasts clearly longer
     * than both, so an answer that waits for the database to come back misses them. Once the database is
     * back, reconciliation completes the payment from the channel's record of its charge.
     *
     * <p>The owner's charge takes longer than W's channel timeout: its outcome is unknown to W, its answer
     * a 202, and the charge (which the channel completes anyway) is settled only by reconciliation.
     */
    @Test
    @Order(2)
    void databaseBlackHoledWhileDuplicatesWait_eachAnswersByItsBound_andThePaymentCompletes() throws Exception {
        int duplicates = 4;
        int waitSeconds = 3;
        // the contract's second past the bound, and 1.5 s of measurement slack on top
        long duplicateBoundMs = waitSeconds * 1000L + 2500;
        long ownerBoundMs = 8000;
        Duration hang = Duration.ofSeconds(9);
        long ownerChargeMs = CHANNEL_TIMEOUT.toMillis() + 500;

        // given: the owner's opening committed and its slow charge under way, duplicates waiting for it
        PayRequest request = client.newRequest();
        channel.sandbox("ok", ownerChargeMs, 1);
        CompletableFuture<Answer> owner = CompletableFuture.supplyAsync(() -> client.pay(request), senders);
        awaitBooks(request, books -> "PAYING".equals(books.orderStatus()), Duration.ofSeconds(5),
                "the owner's opening transaction");
        List<CompletableFuture<Answer>> waiting = new ArrayList<>();
        for (int i = 0; i < duplicates; i++) {
            // a transport timeout far past every bound: a late answer is measured, not cut off
            waiting.add(CompletableFuture.supplyAsync(
                    () -> client.payPreferringWait(request, waitSeconds, Duration.ofSeconds(30)), senders));
        }
        awaitWaiters();
        // time for the other duplicates to start waiting too: the metric counts tokens waited for, not waiters
        Thread.sleep(100);
        assertFalse(owner.isDone(), "the owner answered before the database stalled");

        // when: MySQL stops answering, for longer than every bound
        database.hang();
        ScheduledFuture<?> restore = timer.schedule(database::restore, hang.toMillis(), TimeUnit.MILLISECONDS);
        try {
            CompletableFuture.allOf(waiting.toArray(CompletableFuture[]::new)).get(hang.plusSeconds(15).toMillis(),
                    TimeUnit.MILLISECONDS);
            owner.get(hang.plusSeconds(15).toMillis(), TimeUnit.MILLISECONDS);
            restore.get(hang.plusSeconds(5).toMillis(), TimeUnit.MILLISECONDS);
        } finally {
            restore.cancel(false);
            database.restore();
        }
        List<Answer> answers = waiting.stream().map(CompletableFuture::join).toList();
        Answer first = owner.join();
        Books settled = awaitSettled(request);
        Answer retry = client.pay(request);
        Answer again = client.pay(request);

        // then: every answer came on time and promised nothing it could not know; the payment completes once
        List<Answer> finals = new ArrayList<>(List.of(retry, again));
        answers.stream().filter(DatabaseStallIT::isFinal).forEach(finals::add);
        if (isFinal(first)) {
            finals.add(first);
        }
        assertAll("owner during the hang: " + first + "; duplicates during the hang: " + answers + "; after the restore: "
                + settled + "; retries " + retry + ", " + again,
                () -> {
                    assertTrue(first.answered(), () -> "owner: an answer, not a transport error: " + first);
                    assertTrue(first.elapsedMs() < ownerBoundMs,
                            () -> "owner: by the channel timeout plus a few seconds: " + first);
                    assertTrue(first.status() == 202 || first.status() == 200, () -> "owner: 202 or 200: " + first);
                },
                () -> assertAll(answers.stream().map(answer -> (Executable) () -> {
                    assertTrue(answer.answered(), () -> "an answer, not a transport error: " + answer);
                    assertTrue(answer.elapsedMs() < duplicateBoundMs, () -> "by the wait bound plus a second: " + answer);
                    assertTrue(answer.isRetryable() || isOwnersProcessing(answer, first),
                            () -> "409 request_in_progress or 503 temporarily_unavailable with Retry-After, or the"
                                    + " owner's own 202: " + answer);
                })),
                () -> assertEquals("PAID", settled.orderStatus(), settled::toString),
                () -> assertEquals(1, settled.charges(), settled::toString),
                () -> assertEquals(1, settled.paymentsFor(request.requestNo()), settled::toString),
                () -> assertEquals("SUCCEEDED", settled.paymentStatus(request.requestNo()), settled::toString),
                () -> assertEquals(200, retry.status(), () -> "the final answer: " + retry),
                () -> assertEquals(channel.channelTxnId(request.requestNo()), retry.field("channel_txn_id"),
                        "the answer names the channel's transaction"),
                () -> assertAll(finals.stream().map(answer -> (Executable) () -> {
                    assertEquals(retry.status(), answer.status(), () -> "every final answer the same: " + answer);
                    assertEquals(retry.body(), answer.body(), "byte for byte");
                })));
    }

    /**
     * A reconciliation run whose statement goes into a connection that never answers again (not closed,
     * not answered: as when a firewall on the way drops the connection's state) must give up, so that the
     * runs after it settle the payment it was meant to settle. {@link TcpProxy#hang()} would not show it:
     * what it held is delivered on restore, and a run stalled on it resumes. Only the runs' statements
     * are silenced: the payment is younger than the min-age throughout the silence, so no silenced run
     * can have claimed it.
     */
    @Test
    @Order(3)
    void reconciliationRunStrandedOnASilentConnection_doesNotStopLaterRuns() throws Exception {
        // given: a payment left PROCESSING, charged at the channel, its answer lost
        PayRequest request = client.newRequest();
        channel.sandbox("timeout_after_accept", 0, 1);
        long sentAt = System.nanoTime();
        Answer first = client.pay(request);
        assertEquals(202, first.status(), () -> "the channel's answer came too late: " + first);

        // when: every connection W uses from now until shortly before the payment may be reconciled goes
        // silent for good; W's reconciler, running every second, is the only one using the database
        long silenceMs = Math.min(2_000,
                TimeUnit.NANOSECONDS.toMillis(sentAt + MIN_AGE.toNanos() - System.nanoTime()) - 500);
        assertTrue(silenceMs >= 1_200, () -> "the silence spans a reconciliation tick: " + silenceMs + " ms");
        int silencedBefore = relay.silenced();
        relay.silenceFor(Duration.ofMillis(silenceMs));
        // the silence runs its whole window: it is the fault under test
        Thread.sleep(silenceMs);
        int silenced = relay.silenced() - silencedBefore;
        Books settled = awaitSettled(request);
        Answer retry = client.pay(request);

        // then: later runs settled it from the channel's record
        assertAll("silenced " + silenced + " connection(s) for " + silenceMs + " ms; " + settled + "; retry " + retry,
                () -> assertTrue(silenced >= 1, "a reconciliation run's statement went into the silence"),
                () -> assertEquals("PAID", settled.orderStatus(), settled::toString),
                () -> assertEquals(1, settled.charges(), settled::toString),
                () -> assertEquals("SUCCEEDED", settled.paymentStatus(request.requestNo()), settled::toString),
                () -> assertEquals(200, retry.status(), () -> "the final answer: " + retry),
                () -> assertTrue(retry.isReplay(), () -> "a replay: " + retry));
    }

    /**
     * The owner answered 202 (its charge outlasted the channel timeout), and then MySQL stops answering:
     * a duplicate arriving now cannot read the token's row, yet the first execution's answer so far is
     * known (the owner handed its 202 over to Redis), so it answers that 202 by its bound, never a 409 that
     * hides it nor a 503 that would say nothing will be charged.
     */
    @Test
    @Order(4)
    void databaseBlackHoledAfterTheOwnersAccepted202_duplicatesAnswerThat202ByTheirBound() throws Exception {
        int waitSeconds = 2;
        long duplicateBoundMs = waitSeconds * 1000L + 2500;
        PayRequest request = client.newRequest();
        channel.sandbox("ok", CHANNEL_TIMEOUT.toMillis() + 1_500, 1);
        Answer first = client.pay(request);
        assertEquals(202, first.status(), () -> "the owner's outcome is unknown: " + first);

        // when: MySQL stops answering, and copies of the request arrive
        database.hang();
        List<Answer> answers;
        try {
            List<CompletableFuture<Answer>> copies = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                copies.add(CompletableFuture.supplyAsync(
                        () -> client.payPreferringWait(request, waitSeconds, Duration.ofSeconds(30)), senders));
            }
            answers = copies.stream().map(CompletableFuture::join).toList();
        } finally {
            database.restore();
        }
        Books settled = awaitSettled(request);

        // then
        assertAll("duplicates during the hang: " + answers,
                () -> assertAll(answers.stream().map(answer -> (Executable) () -> {
                    assertTrue(answer.elapsedMs() < duplicateBoundMs, () -> "by the wait bound plus a second: " + answer);
                    assertTrue(isOwnersProcessing(answer, first), () -> "the owner's own 202: " + answer);
                })),
                () -> assertEquals(1, settled.charges(), settled::toString),
                () -> assertEquals("PAID", settled.orderStatus(), settled::toString));
    }

    private static boolean isFinal(Answer answer) {
        return answer.answered() && answer.status() != 202 && !answer.isRetryable();
    }

    /** The contract lets a duplicate repeat the owner's 202 once the owner gave it. */
    private static boolean isOwnersProcessing(Answer answer, Answer owner) {
        return answer.status() == 202 && owner.status() == 202 && owner.body().equals(answer.body());
    }

    /** Until W has a duplicate waiting; the metric counts tokens waited for on W. */
    private void awaitWaiters() {
        Await.until("a duplicate waiting on W", Duration.ofSeconds(5),
                () -> Operations.metricSum(instances.worker(), "payonce_idempotency_waiters") >= 1);
    }

    private Books awaitBooks(PayRequest request, Predicate<Books> condition, Duration bound, String what) {
        return Await.until(what, bound, () -> channel.books(request.orderNo()), condition);
    }

    /** The books once nothing is PAYING or PROCESSING, or as they are at {@link #SETTLE_BOUND}. */
    private Books awaitSettled(PayRequest request) {
        return Await.upTo(SETTLE_BOUND, () -> channel.books(request.orderNo()), Books::settled);
    }

    /**
     * A loopback TCP relay that can silence connections for good: a connection that sends anything towards
     * the server during a silence is never forwarded another byte in either direction, and is not closed
     * (unless its client closes it). Connections idle during the silence, and all after it, work as usual.
     */
    private static final class SilencingRelay implements AutoCloseable {

        private final int upstreamPort;
        private final ServerSocket server;
        private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
        private final AtomicInteger silenced = new AtomicInteger();
        private volatile boolean silenceSet;
        private volatile long silentUntilNanos;

        SilencingRelay(int upstreamPort) throws IOException {
            this.upstreamPort = upstreamPort;
            this.server = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
            daemon("relay-accept-" + server.getLocalPort(), this::acceptLoop).start();
        }

        int port() {
            return server.getLocalPort();
        }

        /** Silences every connection that sends towards the server within the next {@code window}. */
        void silenceFor(Duration window) {
            silentUntilNanos = System.nanoTime() + window.toNanos();
            silenceSet = true;
        }

        /** Connections silenced so far. */
        int silenced() {
            return silenced.get();
        }

        private boolean silencing() {
            return silenceSet && System.nanoTime() - silentUntilNanos < 0;
        }

        @Override
        public void close() {
            try {
                server.close();
            } catch (IOException ignored) {
                // closing anyway
            }
            sockets.forEach(TcpProxy::quietly);
        }

        private void acceptLoop() {
            while (!server.isClosed()) {
                Socket client;
                try {
                    client = server.accept();
                } catch (IOException e) {
                    return; // closed
                }
                try {
                    Socket upstream = new Socket();
                    upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), upstreamPort), 2_000);
                    new Connection(client, upstream).start();
                } catch (IOException e) {
                    quietly(client);
                }
            }
        }

        private final class Connection {
            private final Socket client;
            private final Socket upstream;
            private volatile boolean silent;

            Connection(Socket client, Socket upstream) {
                this.client = client;
                this.upstream = upstream;
            }

            void start() throws IOException {
                sockets.add(client);
                sockets.add(upstream);
                pump("up", client.getInputStream(), upstream.getOutputStream(), true);
                pump("down", upstream.getInputStream(), client.getOutputStream(), false);
            }

            private void pump(String name, InputStream in, OutputStream out, boolean towardsServer) {
                daemon("relay-" + name, () -> {
                    byte[] buffer = new byte[16 * 1024];
                    try {
                        int n;
                        while ((n = in.read(buffer)) >= 0) {
                            if (towardsServer && !silent && silencing()) {
                                silent = true;
                                silenced.incrementAndGet();
                            }
                            if (!silent) {
                                out.write(buffer, 0, n);
                                out.flush();
                            }
                        }
                    } catch (IOException e) {
                        // the other side closed it
                    }
                    // an end on either side ends both, silent or not, so the server frees the session
                    quietly(client);
                    quietly(upstream);
                    sockets.remove(client);
                    sockets.remove(upstream);
                }).start();
            }
        }
    }
}
