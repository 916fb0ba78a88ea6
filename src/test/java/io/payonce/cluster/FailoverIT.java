package io.payonce.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer.OrderAnnotation;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.EachRequest;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayClient.Ledger;
import io.payonce.support.PayRequest;
import io.payonce.support.ReplicatedMariaDb;
import io.payonce.support.ReplicatedMariaDb.Promotion;
import io.payonce.support.ReplicatedMariaDb.SemiSync;
import io.payonce.support.ServerLogs;
import io.payonce.support.TcpProxy;
import io.payonce.support.ThrowawayRedis;

/**
 * Instances A and B on a MariaDB primary with a semi-synchronous replica ({@code AFTER_SYNC}), reached
 * through one address (a {@link TcpProxy}, as a virtual IP or a database proxy). In the middle of a storm
 * of payments the primary is killed (SIGKILL); a second later, as a failover manager notices, the
 * replica applies what it received and is promoted, and the address moves to it. The channel is the
 * sandbox of a third instance S on the shared MariaDB, so its ledger outlives the primary. Every
 * request is sent as a few identical copies split across A and B, and each copy is sent again with the
 * same key and body, as a real client does, until it has a final answer.
 *
 * <p>No request may be charged twice, nothing acknowledged may be missing on the promoted replica, and
 * every copy of a request ends with the same answer. One failover serves the tests of the storm: they
 * read, in order, what it left behind. The last two show, on a primary and replica of their own, why
 * the setup is what PayOnce requires: without {@code AFTER_SYNC} other sessions see a commit the
 * replica does not have, and a semi-sync timeout turns into an acknowledged commit the promotion loses.
 */
@ExtendWith(ServerLogs.OnFailure.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(OrderAnnotation.class)
class FailoverIT {

    private static final String MERCHANT = "merchant_failover";
    private static final String CHANNEL_DATABASE = "payonce_failover_channel";
    private static final int REQUESTS = 40;
    private static final int COPIES = 3;
    private static final long EVERY_MS = 100;
    /** The primary dies once this many payments have been acknowledged, whatever the machine's speed... */
    private static final int ACKNOWLEDGED_BEFORE_THE_KILL = 5;
    /** ...and no more than this many requests are sent before it does. */
    private static final int SENT_BEFORE_THE_KILL = REQUESTS / 2;
    private static final Duration KILL_BOUND = Duration.ofSeconds(30);
    /** How long a failover manager takes to notice the dead primary before it promotes the replica. */
    private static final long DETECTION_MS = 1_000;
    private static final long CHARGE_MS = 200;
    /** How long a copy asks to wait for another copy's execution (Prefer: wait) before it is told to come back. */
    private static final int WAIT_S = 2;
    private static final Duration PAY_TIMEOUT = Duration.ofSeconds(15);
    /** A client's patience for one request: every copy stops sending after this many sends or this long. */
    private static final int MAX_SENDS = 30;
    private static final Duration PATIENCE = Duration.ofSeconds(40);
    /** The instances find the promoted replica on their next connection: a few seconds at most. */
    private static final Duration RECONNECT_BOUND = Duration.ofSeconds(10);
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(20);
    private static final String WAITING_FOR_ACK = "Waiting for semi-sync ACK from slave";

    private ReplicatedMariaDb db;
    private TcpProxy vip;
    private final ThrowawayRedis redis = new ThrowawayRedis();
    private AppProcess channelApp;
    private AppProcess a;
    private AppProcess b;
    private PayClient channel;
    private ExecutorService clients;
    private ReplicatedMariaDb demo;

    private SemiSync atStart;
    private volatile SemiSync beforeKill;
    private volatile Promotion promotion;
    private long clusterUpInMs;
    private long startedNanos;
    private volatile long killedAtMs;
    private volatile long movedAtMs;
    private List<PayRequest> requests;
    private final Map<PayRequest, Long> sentAtMs = new ConcurrentHashMap<>();
    private final Map<String, Long> readyAgainAfterMs = new ConcurrentHashMap<>();
    private final Map<PayRequest, Long> acknowledgedAtMs = new ConcurrentHashMap<>();
    private final CompletableFuture<Void> killed = new CompletableFuture<>();
    private final Map<PayRequest, List<Copy>> copies = new LinkedHashMap<>();
    private final Map<PayRequest, Books> books = new LinkedHashMap<>();

    /** One answer a copy got, and when it sent the request (ms after the storm began). */
    private record Sent(String instance, long atMs, Answer answer) {

        long answeredAtMs() {
            return atMs + answer.elapsedMs();
        }

        @Override
        public String toString() {
            return instance + " at " + atMs + " ms: " + (answer.answered() ? answer.status()
                    + (answer.code() != null ? " " + answer.code() : "") : "no answer (" + answer.transportError() + ")")
                    + " after " + answer.elapsedMs() + " ms";
        }
    }

    /** Everything one copy of a request sent and got; its last answer is final unless the client lost patience. */
    private record Copy(int copy, List<Sent> sent) {

        Answer last() {
            return sent.get(sent.size() - 1).answer();
        }
    }

    @BeforeAll
    void killThePrimaryMidStorm_promoteTheReplica_moveTheAddress() throws Exception {
        long setUp = System.nanoTime();
        db = ReplicatedMariaDb.named("failover", "test").start();
        clusterUpInMs = (System.nanoTime() - setUp) / 1_000_000;
        atStart = db.semiSync();
        vip = new TcpProxy(db.primaryPort());
        recreateChannelDatabase();
        String redisHosts = redis.start().get("quarkus.redis.hosts");
        URI shared = sharedDatabase();
        channelApp = AppProcess.named("failover-channel")
                .env("QUARKUS_DATASOURCE_REACTIVE_URL",
                        "mysql://" + shared.getHost() + ":" + shared.getPort() + "/" + CHANNEL_DATABASE)
                .env("QUARKUS_DATASOURCE_JDBC_URL",
                        "jdbc:mariadb://" + shared.getHost() + ":" + shared.getPort() + "/" + CHANNEL_DATABASE)
                // S needs no Redis; should anything in it connect, it is to the throwaway, never the shared one
                .env("PAYONCE_REDIS_ENABLED", "false")
                .env("QUARKUS_REDIS_HOSTS", redisHosts)
                .env("PAYONCE_RECONCILE_INTERVAL", "1h");
        a = instance("failover-a", redisHosts);
        b = instance("failover-b", redisHosts);
        // A migrates the fresh schema alone; B starts on a migrated one
        AppProcess.startAll(channelApp, a);
        b.start().awaitReady();
        channel = new PayClient(channelApp, MERCHANT);
        PayClient clientA = new PayClient(a, MERCHANT);
        PayClient clientB = new PayClient(b, MERCHANT);
        // one payment through each, so the storm finds both past their first, slow requests
        assertEquals(200, clientA.pay(clientA.newRequest()).status(), "a warm-up payment through A");
        assertEquals(200, clientB.pay(clientB.newRequest()).status(), "a warm-up payment through B");
        requests = clientA.newRequests(REQUESTS);
        channel.sandbox("ok", CHARGE_MS, 100 * REQUESTS);

        clients = Executors.newFixedThreadPool(REQUESTS * COPIES);
        ExecutorService manager = Executors.newSingleThreadExecutor();
        Map<PayRequest, List<Future<Copy>>> sending = new LinkedHashMap<>();
        startedNanos = System.nanoTime();
        CompletableFuture<Void> failover = CompletableFuture.runAsync(this::failOver, manager);
        manager.shutdown();
        for (int i = 0; i < REQUESTS; i++) {
            if (i == SENT_BEFORE_THE_KILL) {
                // the second half of the storm meets the dead primary, the promotion and the moved address
                Await.until("the primary to be killed", KILL_BOUND, killed::isDone);
            }
            PayRequest request = requests.get(i);
            sentAtMs.put(request, nowMs());
            List<Future<Copy>> futures = new ArrayList<>();
            for (int c = 0; c < COPIES; c++) {
                int copy = c;
                AppProcess instance = (i + c) % 2 == 0 ? a : b;
                futures.add(clients.submit(() -> send(request, copy, instance)));
            }
            sending.put(request, futures);
            Thread.sleep(EVERY_MS);
        }
        failover.get(KILL_BOUND.plusSeconds(60).toSeconds(), TimeUnit.SECONDS);

        for (var request : sending.entrySet()) {
            List<Copy> done = new ArrayList<>();
            for (Future<Copy> copy : request.getValue()) {
                done.add(copy.get(PATIENCE.plus(PAY_TIMEOUT).toMillis(), TimeUnit.MILLISECONDS));
            }
            copies.put(request.getKey(), done);
        }
        channel.sandbox("ok", 0, 0);
        // bounded; the tests judge whatever is left unsettled
        Await.upTo(SETTLE_BOUND, this::nothingInFlightOnTheReplica);
        for (PayRequest request : requests) {
            books.put(request, booksOnTheReplica(request));
        }
        System.out.println(summary());
    }

    /**
     * As a failover manager: once the storm has payments acknowledged (so that there is something to lose),
     * SIGKILL of the primary; a moment to notice; the replica applies what it received and is promoted;
     * the address moves to it.
     */
    private void failOver() {
        try {
            Await.until(ACKNOWLEDGED_BEFORE_THE_KILL + " payments to be acknowledged", KILL_BOUND,
                    () -> acknowledgedAtMs.size() >= ACKNOWLEDGED_BEFORE_THE_KILL);
            beforeKill = db.semiSync();
            db.killPrimary();
            killedAtMs = nowMs();
            killed.complete(null);
            Thread.sleep(DETECTION_MS);
            promotion = db.promoteReplica();
            vip.pointAt(db.replicaPort());
            movedAtMs = nowMs();
            // bounded; the tests judge which instance was not ready again in time
            Await.upTo(RECONNECT_BOUND, () -> {
                for (AppProcess instance : List.of(a, b)) {
                    if (!readyAgainAfterMs.containsKey(instance.toString()) && ready(instance)) {
                        readyAgainAfterMs.put(instance.toString(), nowMs() - movedAtMs);
                    }
                }
                return readyAgainAfterMs.size() == 2;
            });
        } catch (Exception | AssertionError e) {
            killed.completeExceptionally(e);
            throw new IllegalStateException("the failover failed", e);
        }
    }

    @AfterAll
    void stop() throws Exception {
        if (clients != null) {
            clients.shutdownNow();
        }
        AppProcess.closeAll(a, b, channelApp);
        if (vip != null) {
            vip.close();
        }
        redis.stop();
        if (db != null) {
            db.close();
        }
        if (demo != null) {
            demo.close();
        }
    }

    @Test
    @Order(1)
    void semiSyncWasLossless_fromTheStartToTheKill() {
        assertEquals("AFTER_SYNC", atStart.waitPoint(), atStart::toString);
        assertTrue(atStart.on(), () -> "Rpl_semi_sync_master_status ON: " + atStart);
        assertTrue(atStart.clients() > 0, () -> "a replica acknowledges: " + atStart);
        assertTrue(atStart.timeoutMs() >= ReplicatedMariaDb.SEMI_SYNC_TIMEOUT.toMillis(), atStart::toString);
        assertTrue(beforeKill.lossless(), () -> "still lossless when the primary was killed: " + beforeKill);
        assertTrue(beforeKill.acknowledgedCommits() > 0, beforeKill::toString);
        assertEquals(0, beforeKill.unacknowledgedCommits(), () -> "no commit went without the replica: " + beforeKill);
    }

    /**
     * The failover was felt, and every answer in it told the client to retry (503, 409 request_in_progress),
     * to ask again later (202) or that it was done (200): no 500, no dropped connection.
     */
    @Test
    @Order(2)
    void theFailoverWasFelt_andEveryAnswerWasPaidAcceptedOrRetryable() {
        assertTrue(allSent().stream().anyMatch(sent -> sent.answer().status() != 200),
                () -> "some copies ran into the failover: " + statuses());
        assertForEach(requests, request -> {
            for (Copy copy : copies.get(request)) {
                for (Sent sent : copy.sent()) {
                    Answer answer = sent.answer();
                    boolean inProgress = answer.status() == 409 && "request_in_progress".equals(answer.code());
                    assertTrue(answer.status() == 200 || answer.status() == 202 || answer.isRetryable() || inProgress,
                            () -> "200, 202, 503 or 409 request_in_progress: " + sent + " " + answer);
                }
            }
        });
    }

    /** The instances' pools find the promoted replica through the moved address on their next connection. */
    @Test
    @Order(3)
    void bothInstances_areReadyAndPayAgainSoonAfterTheAddressMoved() {
        assertEquals(2, readyAgainAfterMs.size(), () -> "both ready again within " + RECONNECT_BOUND + ": "
                + readyAgainAfterMs);
        for (AppProcess instance : List.of(a, b)) {
            Optional<Long> firstPaid = firstPaidAfterTheMove(instance);
            assertTrue(firstPaid.isPresent(), () -> instance + " paid something sent after the move: " + statuses());
            assertTrue(firstPaid.get() < RECONNECT_BOUND.toMillis(),
                    () -> instance + " paid " + firstPaid.get() + " ms after the move");
        }
    }

    @Test
    @Order(4)
    void noRequestIsChargedTwice() {
        assertForEach(requests, request -> {
            Books seen = books.get(request);
            assertTrue(seen.charges() <= 1, () -> "one charge at most: " + seen);
        });
    }

    /** Whatever was answered 200, before the kill or after, is PAID on the promoted replica: nothing acknowledged is lost. */
    @Test
    @Order(5)
    void everyAcknowledgedPayment_isPaidOnThePromotedReplica() {
        List<PayRequest> acknowledgedBeforeTheKill = requests.stream()
                .filter(request -> allSent(request).stream()
                        .anyMatch(sent -> sent.answer().status() == 200 && sent.answeredAtMs() < killedAtMs))
                .toList();
        assertFalse(acknowledgedBeforeTheKill.isEmpty(), () -> "some payments were acknowledged before the kill: "
                + statuses());
        assertForEach(requests, request -> {
            if (allSent(request).stream().noneMatch(sent -> sent.answer().status() == 200)) {
                return;
            }
            Books seen = books.get(request);
            assertEquals("PAID", seen.orderStatus(), seen::toString);
            assertEquals("SUCCEEDED", seen.paymentStatus(request.requestNo()), seen::toString);
        });
    }

    /**
     * Every copy ends with a final answer, the same for all copies of a request byte for byte, and here, with
     * a channel that charges everything, it is 200: each request paid once.
     */
    @Test
    @Order(6)
    void everyCopyOfARequest_endsWithTheSameAnswer_paidOnce() {
        assertForEach(requests, request -> {
            List<Copy> all = copies.get(request);
            Answer first = all.get(0).last();
            for (Copy copy : all) {
                Answer last = copy.last();
                assertEquals(200, last.status(), () -> "copy " + copy.copy() + " ends paid: " + last);
                assertEquals(first.body(), last.body(), () -> "copy " + copy.copy() + " ends with copy 0's answer");
            }
            Books seen = books.get(request);
            assertEquals("PAID", seen.orderStatus(), seen::toString);
            assertEquals(1, seen.charges(), seen::toString);
        });
    }

    @Test
    @Order(7)
    void noRequestNumberHasTwoPaymentRecords() throws SQLException {
        try (Connection c = db.replica();
                PreparedStatement s = c.prepareStatement("SELECT request_no, COUNT(*) FROM payments"
                        + " WHERE merchant_id = ? GROUP BY request_no HAVING COUNT(*) > 1")) {
            s.setString(1, MERCHANT);
            try (ResultSet rows = s.executeQuery()) {
                assertFalse(rows.next(), "no request number has two payment records on the promoted replica");
            }
        }
        assertForEach(requests, request -> {
            Books seen = books.get(request);
            assertEquals(1, seen.payments().size(), () -> "one payment record for the order: " + seen);
        });
    }

    /**
     * A request acknowledged before the kill, sent again after the failover with Redis emptied, is a replay
     * of its stored answer read from the promoted replica: no fresh execution, nothing sent to the channel.
     */
    @Test
    @Order(8)
    void acknowledgedBeforeTheKill_isReplayedFromThePromotedReplica() {
        assertEquals("+OK", ThrowawayRedis.command("FLUSHALL"));
        List<PayRequest> acknowledged = requests.stream().filter(request -> allSent(request).stream()
                .anyMatch(sent -> sent.answer().status() == 200 && sent.answeredAtMs() < killedAtMs)).toList();
        assertForEach(acknowledged, request -> {
            Ledger before = channel.ledger(request.orderNo());
            Answer again = new PayClient(b, MERCHANT).pay(request);
            assertEquals(200, again.status(), again::toString);
            assertTrue(again.isReplay(), () -> "a replay: " + again);
            assertEquals(copies.get(request).get(0).last().body(), again.body(), "byte for byte");
            assertEquals(before, channel.ledger(request.orderNo()), "nothing more reached the channel");
        });
    }

    /**
     * MariaDB's default wait point: the primary commits, and shows the row to every session, before the
     * replica has it. A reader may act on a row that a failover then loses.
     */
    @Test
    @Order(9)
    void afterCommit_otherSessionsSeeARowTheReplicaDoesNotHave() throws Exception {
        ReplicatedMariaDb cluster = demo();
        cluster.semiSyncWaitPoint("AFTER_COMMIT");
        cluster.stopReplicaReceiving();
        CompletableFuture<Void> insert = insertAsync(cluster, "req_after_commit");
        awaitWaitingForAck(cluster);

        long seenOnThePrimary = count(cluster.primary(), "req_after_commit");
        long onTheReplica = count(cluster.replica(), "req_after_commit");
        cluster.startReplicaReceiving();
        insert.get(30, TimeUnit.SECONDS);
        cluster.semiSyncWaitPoint("AFTER_SYNC");

        assertEquals(1, seenOnThePrimary, "another session sees the row while its commit waits for the replica");
        assertEquals(0, onTheReplica, "the replica does not have it yet");
    }

    /**
     * With {@code AFTER_SYNC} nobody sees the row until the replica has it; but when the replica does not
     * answer within the timeout, the primary acknowledges the commit anyway, reports semi-sync OFF and
     * nothing else, and a promotion then loses the row: the same request number inserts again.
     */
    @Test
    @Order(10)
    void afterSync_hidesTheRowUntilTheTimeout_thenFallsBackSilently_andThePromotionLosesIt() throws Exception {
        ReplicatedMariaDb cluster = demo();
        cluster.semiSyncWaitPoint("AFTER_SYNC");
        cluster.semiSyncTimeout(Duration.ofSeconds(3));
        cluster.stopReplicaReceiving();
        long started = System.nanoTime();
        CompletableFuture<Void> insert = insertAsync(cluster, "req_lost");
        awaitWaitingForAck(cluster);
        long seenWhileWaiting = count(cluster.primary(), "req_lost");

        insert.get(30, TimeUnit.SECONDS);
        long committedAfterMs = (System.nanoTime() - started) / 1_000_000;
        SemiSync fallenBack = cluster.semiSync();
        long seenAfterTheTimeout = count(cluster.primary(), "req_lost");
        cluster.killPrimary();
        cluster.promoteReplica();
        long onThePromotedReplica = count(cluster.replica(), "req_lost");
        try (Connection c = cluster.replica(); Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO payments (request_no) VALUES ('req_lost')");
        }

        assertEquals(0, seenWhileWaiting, "nobody sees the row while its commit waits for the replica");
        assertTrue(committedAfterMs >= 2_900, () -> "the commit returned OK after the timeout: " + committedAfterMs);
        assertFalse(fallenBack.on(), () -> "semi-sync fell back to asynchronous: " + fallenBack);
        assertEquals(1, fallenBack.unacknowledgedCommits(), fallenBack::toString);
        assertEquals(1, seenAfterTheTimeout, "acknowledged and visible on the primary");
        assertEquals(0, onThePromotedReplica, "the promotion lost it");
        assertEquals(1, count(cluster.replica(), "req_lost"), "the same request number inserted again, no 1062");
    }

    /** One copy of a request as a real client sends it: again, same key and body, until a final answer. */
    private Copy send(PayRequest request, int copy, AppProcess instance) throws InterruptedException {
        PayClient client = new PayClient(instance, MERCHANT);
        List<Sent> sent = new ArrayList<>();
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        for (int n = 0; n < MAX_SENDS && System.nanoTime() < deadline; n++) {
            long atMs = nowMs();
            Answer answer = Answer.of(() -> request.on(client.call(PAY_TIMEOUT)).header("Prefer", "wait=" + WAIT_S)
                    .post("/pay"));
            sent.add(new Sent(instance.toString(), atMs, answer));
            if (answer.status() == 200) {
                acknowledgedAtMs.putIfAbsent(request, atMs + answer.elapsedMs());
            }
            if (isFinal(answer)) {
                break;
            }
            if (answer.status() == 202) {
                // charged or not, the channel has not told: ask for the payment until it is decided, then again
                Await.upTo(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())),
                        () -> decided(client, request));
            } else {
                Thread.sleep(answer.retryAfter() != null ? Math.min(1_000, 1_000L * Long.parseLong(answer.retryAfter()))
                        : 250);
            }
        }
        return new Copy(copy, sent);
    }

    /** Readiness, which needs the database: the instance has a working connection to it. */
    private static boolean ready(AppProcess instance) {
        try {
            return instance.management().get("/q/health/ready").statusCode() == 200;
        } catch (Exception notListening) {
            // REST Assured throws a broken connection's IOException undeclared
            return false;
        }
    }

    private static boolean isFinal(Answer answer) {
        boolean inProgress = answer.status() == 409 && "request_in_progress".equals(answer.code());
        return answer.answered() && answer.status() != 202 && answer.status() < 500 && !inProgress;
    }

    /** The payment record is SUCCEEDED or FAILED; an unreachable instance or database is not decided. */
    private static boolean decided(PayClient client, PayRequest request) {
        try {
            String status = client.paymentStatus(request.requestNo());
            return status == null || !"PROCESSING".equals(status);
        } catch (Exception | AssertionError notNow) {
            // REST Assured throws a broken connection's IOException undeclared
            return false;
        }
    }

    private AppProcess instance(String name, String redisHosts) throws Exception {
        String address = "//127.0.0.1:" + vip.port() + "/" + db.database();
        return AppProcess.named(name)
                .channel(channelApp.sandboxUrl())
                .env("QUARKUS_DATASOURCE_REACTIVE_URL", "mysql:" + address)
                .env("QUARKUS_DATASOURCE_JDBC_URL", "jdbc:mariadb:" + address)
                .env("QUARKUS_REDIS_HOSTS", redisHosts)
                .env("PAYONCE_SANDBOX_ENABLED", "false")
                .env("PAYONCE_RECONCILE_INTERVAL", "1s")
                // short, so that the short reconciliation age and lease can be above it, as they must
                .env("PAYONCE_CHANNEL_TIMEOUT", "1s")
                .env("PAYONCE_RECONCILE_MIN_AGE", "2s")
                .env("PAYONCE_IDEMPOTENCY_LEASE", "4s");
    }

    /** The shared MariaDB the build's tests use, from the build's own datasource URL. */
    private static URI sharedDatabase() {
        return URI.create(System.getenv().getOrDefault("QUARKUS_DATASOURCE_JDBC_URL",
                "jdbc:mariadb://127.0.0.1:3306/test").substring("jdbc:".length()));
    }

    private static void recreateChannelDatabase() throws SQLException {
        URI shared = sharedDatabase();
        try (Connection c = DriverManager.getConnection("jdbc:mariadb://" + shared.getHost() + ":" + shared.getPort() + "/",
                System.getenv().getOrDefault("QUARKUS_DATASOURCE_USERNAME", "root"),
                System.getenv().getOrDefault("QUARKUS_DATASOURCE_PASSWORD", ""));
                Statement s = c.createStatement()) {
            s.execute("DROP DATABASE IF EXISTS `" + CHANNEL_DATABASE + "`");
            s.execute("CREATE DATABASE `" + CHANNEL_DATABASE + "`");
        }
    }

    /** An order and its payment records as the promoted replica holds them, and the channel's ledger. */
    private Books booksOnTheReplica(PayRequest request) throws SQLException {
        String orderStatus = null;
        List<Map<String, String>> payments = new ArrayList<>();
        try (Connection c = db.replica()) {
            try (PreparedStatement s = c.prepareStatement(
                    "SELECT status FROM orders WHERE merchant_id = ? AND order_no = ?")) {
                s.setString(1, MERCHANT);
                s.setString(2, request.orderNo());
                try (ResultSet rows = s.executeQuery()) {
                    orderStatus = rows.next() ? rows.getString(1) : null;
                }
            }
            try (PreparedStatement s = c.prepareStatement(
                    "SELECT request_no, status FROM payments WHERE merchant_id = ? AND order_no = ?")) {
                s.setString(1, MERCHANT);
                s.setString(2, request.orderNo());
                try (ResultSet rows = s.executeQuery()) {
                    while (rows.next()) {
                        payments.add(Map.of("request_no", rows.getString(1), "status", rows.getString(2)));
                    }
                }
            }
        }
        Ledger ledger = channel.ledger(request.orderNo());
        return new Books(orderStatus, payments, ledger.charges(), ledger.attempts());
    }

    private boolean nothingInFlightOnTheReplica() throws SQLException {
        try (Connection c = db.replica();
                PreparedStatement s = c.prepareStatement("SELECT (SELECT COUNT(*) FROM orders WHERE merchant_id = ?"
                        + " AND status = 'PAYING') + (SELECT COUNT(*) FROM payments WHERE merchant_id = ?"
                        + " AND status = 'PROCESSING')")) {
            s.setString(1, MERCHANT);
            s.setString(2, MERCHANT);
            try (ResultSet rows = s.executeQuery()) {
                rows.next();
                return rows.getLong(1) == 0;
            }
        }
    }

    /** The first pay call to {@code instance} sent after the address moved and answered 200: ms after the move. */
    private Optional<Long> firstPaidAfterTheMove(AppProcess instance) {
        return allSent().stream()
                .filter(sent -> sent.instance().equals(instance.toString()) && sent.atMs() >= movedAtMs
                        && sent.answer().status() == 200)
                .map(sent -> sent.answeredAtMs() - movedAtMs)
                .min(Long::compare);
    }

    /** The primary and replica of the last two tests, started on first use. */
    private ReplicatedMariaDb demo() throws Exception {
        if (demo == null) {
            demo = ReplicatedMariaDb.named("failover-demo", "demo").start();
            try (Connection c = demo.primary(); Statement s = c.createStatement()) {
                s.execute("CREATE TABLE payments (request_no VARCHAR(64) NOT NULL PRIMARY KEY)");
            }
        }
        return demo;
    }

    private static CompletableFuture<Void> insertAsync(ReplicatedMariaDb cluster, String requestNo) {
        return CompletableFuture.runAsync(() -> {
            try (Connection c = cluster.primary(); Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO payments (request_no) VALUES ('" + requestNo + "')");
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    /** Until a session on the primary waits for the replica's acknowledgement of its commit. */
    private static void awaitWaitingForAck(ReplicatedMariaDb cluster) {
        Await.until("a commit waiting for the replica's acknowledgement", Duration.ofSeconds(10), () -> {
            try (Connection c = cluster.primary();
                    PreparedStatement s = c.prepareStatement(
                            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = ?")) {
                s.setString(1, WAITING_FOR_ACK);
                try (ResultSet rows = s.executeQuery()) {
                    rows.next();
                    return rows.getLong(1) > 0;
                }
            }
        });
    }

    private static long count(Connection connection, String requestNo) throws SQLException {
        try (Connection c = connection;
                PreparedStatement s = c.prepareStatement("SELECT COUNT(*) FROM payments WHERE request_no = ?")) {
            s.setString(1, requestNo);
            try (ResultSet rows = s.executeQuery()) {
                rows.next();
                return rows.getLong(1);
            }
        }
    }

    private long nowMs() {
        return (System.nanoTime() - startedNanos) / 1_000_000;
    }

    private List<Sent> allSent() {
        return requests.stream().flatMap(request -> allSent(request).stream()).toList();
    }

    private List<Sent> allSent(PayRequest request) {
        return copies.get(request).stream().flatMap(copy -> copy.sent().stream()).toList();
    }

    /** Answers by kind over the whole storm: status and code, or no answer. */
    private Map<String, Long> statuses() {
        return allSent().stream().collect(Collectors.groupingBy(sent -> sent.answer().answered()
                ? sent.answer().status() + (sent.answer().code() != null ? " " + sent.answer().code() : "")
                : "no answer", TreeMap::new, Collectors.counting()));
    }

    private String summary() {
        Map<String, Long> afterKill = allSent().stream().filter(sent -> sent.answeredAtMs() >= killedAtMs)
                .collect(Collectors.groupingBy(sent -> sent.answer().answered() ? String.valueOf(sent.answer().status())
                        : "no answer", TreeMap::new, Collectors.counting()));
        Map<String, Object> firstPaid = new HashMap<>();
        for (AppProcess instance : List.of(a, b)) {
            firstPaid.put(instance.toString(), firstPaidAfterTheMove(instance).map(ms -> ms + " ms").orElse("never"));
        }
        long sentAgainToTheChannel = books.values().stream().filter(seen -> seen.attempts() > 1).count();
        return "FailoverIT: primary and replica up in " + clusterUpInMs + " ms; primary killed at " + killedAtMs + " ms, replica promoted in " + promotion.tookMs()
                + " ms (applied " + promotion.appliedGtid() + "), address moved at " + movedAtMs + " ms; answers "
                + statuses() + ", of them answered after the kill " + afterKill + "; ready again after the move "
                + readyAgainAfterMs + ", first 200 after the move " + firstPaid + "; requests the channel received more than once " + sentAgainToTheChannel
                + "; semi-sync before the kill: " + beforeKill;
    }

    private String story(PayRequest request) {
        return request.requestNo() + " (sent at " + sentAtMs.get(request) + " ms; primary killed at " + killedAtMs
                + " ms, address moved at " + movedAtMs + " ms; copies " + copies.get(request) + "; books "
                + books.get(request) + ")";
    }

    private void assertForEach(List<PayRequest> some, EachRequest.Check check) {
        EachRequest.assertForEach(some, this::story, check);
    }
}
