package io.payonce.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer.OrderAnnotation;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.Concurrently;
import io.payonce.support.EachRequest;
import io.payonce.support.GaleraCluster;
import io.payonce.support.PayClient;
import io.payonce.support.PayRequest;
import io.payonce.support.ServerLogs;
import io.payonce.support.ThrowawayRedis;

/**
 * Two instances of the packaged application on a three-node MariaDB Galera cluster: A on node 1, B on
 * node 2, node 3 serving neither. Every request is sent as a storm of identical copies (same token, same
 * body) split across A and B, so that its copies race on two nodes whose unique indexes and conditional
 * updates only meet at certification. With every node up, with the Redis fast path and with Redis cut
 * (Galera alone deciding), each copy must get the one answer, 200 PAID, of one charge; with a node killed
 * mid-storm, clients that retry as real ones do (the same key and body, alternating instances) must all
 * end with the same final answer of one charge, and nothing acknowledged may be missing on the nodes that
 * survived or on the killed node once it has rejoined.
 *
 * <p>The channel is the sandbox of a third instance on the shared MariaDB, in a database of its own, so
 * the ledger that counts charges never lives on a node that dies.
 */
@ExtendWith(ServerLogs.OnFailure.class)
@TestMethodOrder(OrderAnnotation.class)
class GaleraIT {

    private static final int NODE_A = 1;
    private static final int NODE_B = 2;
    private static final int NODE_SPARE = 3;
    private static final String CHANNEL_DATABASE = "payonce_galera_channel";
    private static final int REQUESTS = 30;
    private static final int COPIES = 6;
    /** Enough threads for five requests' copies at once: a storm, not a queue, on two cores. */
    private static final int THREADS = 5 * COPIES;
    private static final long CHARGE_LATENCY_MS = 300;
    private static final Duration STORM_BOUND = Duration.ofSeconds(90);
    /** A client's retries of one copy: this many sends at most, within this time. */
    private static final int MAX_SENDS = 40;
    private static final Duration RETRY_BOUND = Duration.ofSeconds(45);

    private static GaleraCluster cluster;
    private static final ThrowawayRedis redis = new ThrowawayRedis();
    private static boolean redisStarted;
    private static AppProcess channelApp;
    private static AppProcess instanceA;
    private static AppProcess instanceB;

    @BeforeAll
    static void startClusterAndInstances() throws Exception {
        String missing = GaleraCluster.missingTools();
        Assumptions.assumeTrue(missing == null, missing);
        // a Redis of the class's own rather than the shared one: behind a proxy, so that one storm can run
        // with the fast path cut, and holding only what these storms wrote, whatever other runs do on 6379
        Map<String, String> viaProxy = redis.start();
        redisStarted = true;
        channelApp = channelInstance();
        channelApp.start();
        cluster = GaleraCluster.named("it");
        Duration clusterStart = cluster.start();
        report("cluster", "three nodes Synced in " + clusterStart.toMillis() + " ms");
        instanceA = paymentInstance("galera-a", NODE_A, viaProxy.get("quarkus.redis.hosts"));
        instanceB = paymentInstance("galera-b", NODE_B, viaProxy.get("quarkus.redis.hosts"));
        // A alone migrates the fresh schema; B finds it replicated to its node
        instanceA.start().awaitReady();
        instanceB.start().awaitReady();
        channelApp.awaitReady();
    }

    @AfterAll
    static void stopAll() throws InterruptedException {
        AppProcess.closeAll(instanceA, instanceB, channelApp);
        if (cluster != null) {
            cluster.close();
        }
        if (redisStarted) {
            redis.stop();
        }
    }

    @Test
    @Order(1)
    void stormSplitAcrossNodes_everyCopyGetsTheOneAnswerOfOneCharge() throws Exception {
        stormWithEveryNodeUp("merchant_galera_storm", "with the Redis fast path");
    }

    /**
     * With Redis cut every copy goes to the token's claim in MySQL: the copies on the other node insert the
     * same token row there, and only certification at COMMIT tells them it was taken.
     */
    @Test
    @Order(2)
    void stormSplitAcrossNodesWithoutRedis_galeraAloneGivesEveryCopyTheOneAnswer() throws Exception {
        ThrowawayRedis.proxy().cut();
        try {
            stormWithEveryNodeUp("merchant_galera_noredis", "with Redis cut");
        } finally {
            ThrowawayRedis.proxy().restore();
        }
    }

    private void stormWithEveryNodeUp(String merchantId, String how) throws Exception {
        cluster.awaitAllSynced();
        Merchant merchant = new Merchant(merchantId);
        List<PayRequest> requests = merchant.newRequests(REQUESTS);
        Conflicts before = Conflicts.now();

        List<List<Answer>> answers = Concurrently.bursts(REQUESTS, COPIES, THREADS, STORM_BOUND,
                (request, copy) -> merchant.on(copy % 2).pay(requests.get(request)));

        String storm = how + ", every node up; answers " + tally(answers.stream().flatMap(List::stream))
                + "; " + Conflicts.now().since(before);
        report(merchantId, storm);
        EachRequest.assertForEach(requests, request -> request.orderNo() + " (" + storm + "): "
                + answers.get(requests.indexOf(request)), request -> {
            List<Answer> copies = answers.get(requests.indexOf(request));
            assertEquals(1, distinct(copies).size(), "every copy on either instance got the same answer");
            assertEquals(200, copies.get(0).status(), "the answer is the charge's");
            assertEquals("PAID", copies.get(0).field("status"));
            assertEquals(1, merchant.ledgerCharges(request), "one charge at the channel");
            for (int node = 1; node <= GaleraCluster.NODES; node++) {
                assertEquals("PAID", orderStatus(node, merchant, request), "order on node " + node);
                assertEquals(1, payments(node, merchant, request), "payment records on node " + node);
            }
        });
    }

    @Test
    @Order(3)
    void nodeWithoutInstanceKilledMidStorm_retriedCopiesEndWithOneChargeAndOneAnswer() throws Exception {
        stormWithNodeKilled("merchant_galera_kill3", NODE_SPARE);
    }

    @Test
    @Order(4)
    void instanceBsNodeKilledMidStorm_retriedCopiesEndWithOneChargeAndOneAnswer() throws Exception {
        stormWithNodeKilled("merchant_galera_kill2", NODE_B);
    }

    /**
     * A storm of retrying clients; once a quarter of its copies have their final answer, {@code victim} is
     * killed. Then every request is checked on the surviving nodes, the victim is started again, and it
     * must rejoin and hold what the survivors hold.
     */
    private void stormWithNodeKilled(String merchantId, int victim) throws Exception {
        cluster.awaitAllSynced();
        Merchant merchant = new Merchant(merchantId);
        List<PayRequest> requests = merchant.newRequests(REQUESTS);
        AtomicInteger finished = new AtomicInteger();
        Conflicts before = Conflicts.now();

        CompletableFuture<List<List<Retries>>> storm = CompletableFuture.supplyAsync(() -> Concurrently.bursts(
                REQUESTS, COPIES, THREADS, STORM_BOUND, (request, copy) -> {
                    Retries retries = merchant.payUntilFinal(requests.get(request), copy % 2);
                    finished.incrementAndGet();
                    return retries;
                }));
        boolean quarterDone = Await.upTo(Duration.ofSeconds(30), () -> finished.get() >= REQUESTS * COPIES / 4);
        long killedAt = System.nanoTime();
        cluster.kill(victim);
        List<List<Retries>> stories = storm.get(STORM_BOUND.toSeconds() + 10, TimeUnit.SECONDS);
        long stormAfterKillMs = (System.nanoTime() - killedAt) / 1_000_000;
        List<Integer> survivors = new ArrayList<>();
        for (int node = 1; node <= GaleraCluster.NODES; node++) {
            if (node != victim) {
                survivors.add(node);
            }
        }

        String when = "node " + victim + " killed after " + (quarterDone ? "a quarter of the copies had ended"
                : "30 s, with fewer than a quarter of the copies ended") + ", the storm ran " + stormAfterKillMs
                + " ms more; answers " + tally(stories.stream().flatMap(List::stream).flatMap(r -> r.answers().stream()))
                + "; " + Conflicts.now(survivors).since(before, survivors);
        report(merchantId, when);
        EachRequest.assertForEach(requests, request -> request.orderNo() + " (" + when + "): "
                + stories.get(requests.indexOf(request)), request -> {
            List<Retries> copies = stories.get(requests.indexOf(request));
            assertTrue(copies.stream().allMatch(Retries::ended), "every copy got a final answer within its retries");
            Set<String> finals = copies.stream().map(r -> text(r.last())).collect(Collectors.toCollection(LinkedHashSet::new));
            assertEquals(1, finals.size(), () -> "every copy's final answer is the same: " + finals);
            assertEquals(1, merchant.ledgerCharges(request), "one charge at the channel");
            Answer last = copies.get(0).last();
            assertEquals(200, last.status(), "the final answer is the charge's");
            assertEquals("PAID", last.field("status"));
            boolean acknowledged = copies.stream().anyMatch(Retries::acknowledged);
            for (int node : survivors) {
                if (acknowledged) {
                    assertEquals("PAID", orderStatus(node, merchant, request), "acknowledged, so PAID on node " + node);
                }
                assertEquals(1, payments(node, merchant, request), "payment records on node " + node);
            }
        });

        // bounded: restart fails the test when the node is not Synced in a cluster of three in time
        Duration rejoin = cluster.restart(victim);
        report(merchantId, "node " + victim + " rejoined in " + rejoin.toMillis() + " ms");
        EachRequest.assertForEach(requests, request -> request.orderNo() + " on node " + victim + " after it rejoined in "
                + rejoin.toMillis() + " ms", request -> {
            assertEquals("PAID", orderStatus(victim, merchant, request));
            assertEquals(1, payments(victim, merchant, request));
        });
    }

    /** Every answer one client got for one copy, sent again while not final, alternating instances. */
    private record Retries(List<Answer> answers) {

        Answer last() {
            return answers.get(answers.size() - 1);
        }

        boolean ended() {
            return isFinal(last());
        }

        boolean acknowledged() {
            return answers.stream().anyMatch(a -> a.status() == 200);
        }

        @Override
        public String toString() {
            return answers.stream().map(a -> a.answered() ? a.status() + (a.code() != null ? " " + a.code() : "")
                    : "no answer").collect(Collectors.joining(", ", "[", "]")) + " ended " + text(last());
        }
    }

    /**
     * Final: what a client acts on, as opposed to "try again" (202, a 5xx, 409 request_in_progress, or no
     * answer at all).
     */
    private static boolean isFinal(Answer answer) {
        return answer.answered() && answer.status() < 500 && answer.status() != 202
                && !"request_in_progress".equals(answer.code());
    }

    /** One merchant's view: payments through A (0) or B (1), the channel's ledger through its instance. */
    private static final class Merchant {
        private final String id;
        private final PayClient[] instances;
        private final PayClient channel;

        Merchant(String id) {
            this.id = id;
            this.instances = new PayClient[] { new PayClient(instanceA, id), new PayClient(instanceB, id) };
            this.channel = new PayClient(channelApp, id);
        }

        PayClient on(int instance) {
            return instances[instance];
        }

        /**
         * Orders and tokens made through A, read back causally on every node, so no copy on B finds its
         * order missing only because node 2 had not applied it yet; the channel charges them after a latency.
         */
        List<PayRequest> newRequests(int count) {
            List<PayRequest> requests = on(0).newRequests(count);
            for (int node = 1; node <= GaleraCluster.NODES; node++) {
                assertEquals(count, cluster.count(node, "SELECT COUNT(*) FROM orders WHERE merchant_id = ?", id),
                        "the orders on node " + node);
            }
            channel.sandbox("ok", CHARGE_LATENCY_MS, count * COPIES * 4);
            return requests;
        }

        long ledgerCharges(PayRequest request) {
            return channel.ledger(request.orderNo()).charges();
        }

        /**
         * Sends the copy to instance {@code first}, and again with the same token and body to the other
         * instance, then the first, while the answer is not final; bounded in sends and time.
         */
        Retries payUntilFinal(PayRequest request, int first) throws InterruptedException {
            List<Answer> answers = new ArrayList<>();
            long deadline = System.nanoTime() + RETRY_BOUND.toNanos();
            long pauseMs = 100;
            for (int send = 0; send < MAX_SENDS && System.nanoTime() < deadline; send++) {
                Answer answer = on((first + send) % 2).pay(request);
                answers.add(answer);
                if (isFinal(answer)) {
                    break;
                }
                Thread.sleep(pauseMs);
                pauseMs = Math.min(pauseMs * 2, 1_000);
            }
            return new Retries(answers);
        }

        String id() {
            return id;
        }
    }

    private static String orderStatus(int node, Merchant merchant, PayRequest request) {
        return cluster.value(node, "SELECT status FROM orders WHERE merchant_id = ? AND order_no = ?", merchant.id(),
                request.orderNo());
    }

    private static long payments(int node, Merchant merchant, PayRequest request) {
        return cluster.count(node, "SELECT COUNT(*) FROM payments WHERE merchant_id = ? AND request_no = ?",
                merchant.id(), request.requestNo());
    }

    /** Galera's own count of transactions it aborted, per node, since a snapshot. */
    private record Conflicts(long[] certificationFailures, long[] bruteForceAborts) {

        static Conflicts now() {
            return now(allNodes());
        }

        static Conflicts now(List<Integer> nodes) {
            long[] failures = new long[GaleraCluster.NODES + 1];
            long[] aborts = new long[GaleraCluster.NODES + 1];
            for (int node : nodes) {
                failures[node] = cluster.counter(node, "wsrep_local_cert_failures");
                aborts[node] = cluster.counter(node, "wsrep_local_bf_aborts");
            }
            return new Conflicts(failures, aborts);
        }

        String since(Conflicts before) {
            return since(before, allNodes());
        }

        /** For each node: commits that failed certification, and transactions aborted by a replicated one. */
        String since(Conflicts before, List<Integer> nodes) {
            return nodes.stream().map(node -> "node " + node + ": " + (certificationFailures[node]
                    - before.certificationFailures[node]) + " certification failures, "
                    + (bruteForceAborts[node] - before.bruteForceAborts[node]) + " brute-force aborts")
                    .collect(Collectors.joining("; "));
        }

        private static List<Integer> allNodes() {
            List<Integer> nodes = new ArrayList<>();
            for (int node = 1; node <= GaleraCluster.NODES; node++) {
                nodes.add(node);
            }
            return nodes;
        }
    }

    /** How many answers of each kind: status and problem code, or no answer. */
    private static String tally(Stream<Answer> answers) {
        return answers.map(a -> a.answered() ? a.status() + (a.code() != null ? " " + a.code() : "") : "no answer")
                .collect(Collectors.groupingBy(kind -> kind, TreeMap::new, Collectors.counting())).toString();
    }

    /** One line per storm in the test's output: what it met, for a reader of a passing run too. */
    private static void report(String storm, String what) {
        System.out.println("GaleraIT " + storm + ": " + what);
    }

    private static Set<String> distinct(List<Answer> answers) {
        return answers.stream().map(GaleraIT::text).collect(Collectors.toCollection(LinkedHashSet::new));
    }

    private static String text(Answer answer) {
        return answer.answered() ? answer.status() + " " + answer.body() : "no answer";
    }

    /** A payment instance on {@code node}, charging through the channel instance's sandbox. */
    private static AppProcess paymentInstance(String name, int node, String redisHosts) throws Exception {
        return AppProcess.named(name)
                .channel(channelApp.sandboxUrl())
                .env("QUARKUS_DATASOURCE_REACTIVE_URL", cluster.reactiveUrl(node))
                .env("QUARKUS_DATASOURCE_JDBC_URL", cluster.jdbcUrl(node))
                .env("QUARKUS_REDIS_HOSTS", redisHosts)
                .env("PAYONCE_SANDBOX_ENABLED", "false")
                .env("PAYONCE_CHANNEL_TIMEOUT", "3s")
                // short, so that what a dead node or a lost answer leaves PROCESSING is settled within a client's retries
                .env("PAYONCE_IDEMPOTENCY_LEASE", "6s")
                .env("PAYONCE_RECONCILE_MIN_AGE", "4s")
                .env("PAYONCE_RECONCILE_INTERVAL", "1s");
    }

    /** The channel: an instance on the shared MariaDB, in a fresh database of its own, reconciling nothing. */
    private static AppProcess channelInstance() throws Exception {
        String jdbc = System.getenv().getOrDefault("QUARKUS_DATASOURCE_JDBC_URL", "jdbc:mariadb://127.0.0.1:3306/test");
        URI server = URI.create(jdbc.substring("jdbc:".length()));
        String user = System.getenv().getOrDefault("QUARKUS_DATASOURCE_USERNAME", "root");
        String password = System.getenv().getOrDefault("QUARKUS_DATASOURCE_PASSWORD", "");
        String address = server.getHost() + ":" + server.getPort();
        try (Connection c = DriverManager.getConnection("jdbc:mariadb://" + address + "/", user, password);
                Statement s = c.createStatement()) {
            s.execute("DROP DATABASE IF EXISTS " + CHANNEL_DATABASE);
            s.execute("CREATE DATABASE " + CHANNEL_DATABASE);
        }
        return AppProcess.named("galera-channel")
                .env("QUARKUS_DATASOURCE_REACTIVE_URL", "mysql://" + address + "/" + CHANNEL_DATABASE)
                .env("QUARKUS_DATASOURCE_JDBC_URL", "jdbc:mariadb://" + address + "/" + CHANNEL_DATABASE)
                // it needs no Redis; should anything in it connect, it is to the throwaway, never the shared one
                .env("PAYONCE_REDIS_ENABLED", "false")
                .env("QUARKUS_REDIS_HOSTS", "redis://127.0.0.1:" + ThrowawayRedis.redisPort())
                .env("PAYONCE_RECONCILE_INTERVAL", "1h");
    }
}
