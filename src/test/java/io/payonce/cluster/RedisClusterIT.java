package io.payonce.cluster;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntPredicate;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.Concurrently;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayRequest;
import io.payonce.support.RedisCluster;
import io.payonce.support.ServerLogs;
import io.restassured.path.json.JsonPath;

/**
 * Two instances of the packaged application on a Redis Cluster of three masters with a replica each
 * ({@code quarkus.redis.client-type=cluster}) and on a database of their own, both charging through
 * instance A's sandbox. Duplicates split across the instances get one charge and one answer per request,
 * with replays served from Redis; a master killed in the middle of a storm changes latency, never an
 * outcome, and once its replica has taken over, replays come from Redis again. Meanwhile the other
 * masters' answers are still replayed from Redis: only the dead master's keys take the MySQL path.
 */
@ExtendWith(ServerLogs.OnFailure.class)
class RedisClusterIT {

    private static final String MERCHANT = "merchant_rcluster";
    private static final String DATABASE = "payonce_rediscluster";
    private static final String SERVER = "jdbc:mariadb://127.0.0.1:3306/";
    private static final Duration READY_BOUND = Duration.ofSeconds(30);
    private static final Duration STORM_BOUND = Duration.ofSeconds(45);
    /** A copy answered 409 or 503 is sent again with its token, for at most this long. */
    private static final Duration FINAL_BOUND = Duration.ofSeconds(25);

    private static final int ORDERS = 6;
    private static final int COPIES = 8;
    /** Slow enough that the copies of an order arrive while its first execution is at the channel. */
    private static final long SLOW_CHARGE_MS = 400;

    private static final int KILL_ORDERS = 9;
    private static final int KILL_COPIES = 6;
    /** Charges in flight when the master dies: their owners hand over through a cluster missing a master. */
    private static final long KILL_CHARGE_MS = 800;
    private static final long KILL_AFTER_MS = 300;
    /** Copy n of an order is sent n spacings after the first, so copies keep arriving through the failover. */
    private static final long COPY_SPACING_MS = 700;
    private static final int RECOVERY_PAYMENTS = 30;
    private static final int STEADY_ANSWERS = 4;
    private static final long RECOVERY_PAUSE_MS = 200;

    private static RedisCluster redis;
    private static AppProcess instanceA;
    private static AppProcess instanceB;
    private static PayClient clientA;
    private static PayClient clientB;

    /** A copy's final answer, with the instants the copy was first sent and its final answer read. */
    private record Timed(Answer answer, long sentNanos, long doneNanos) {
    }

    @BeforeAll
    static void startClusterAndInstances() throws Exception {
        recreateDatabase();
        redis = RedisCluster.start("it");
        instanceA = instance("rcluster-a");
        instanceB = instance("rcluster-b");
        // both charge through A's sandbox, so they share one channel and its ledger
        instanceA.channel(instanceA.sandboxUrl());
        instanceB.channel(instanceA.sandboxUrl());
        AppProcess.startAll(instanceA, instanceB);
        clientA = new PayClient(instanceA, MERCHANT);
        clientB = new PayClient(instanceB, MERCHANT);
        for (AppProcess app : List.of(instanceA, instanceB)) {
            Await.until(app + " to report the fast path up with pub/sub", READY_BOUND,
                    () -> readiness(app), "redis=up, wake_ups=pubsub"::equals);
        }
    }

    @AfterAll
    static void stopAll() throws InterruptedException {
        try {
            AppProcess.closeAll(instanceA, instanceB);
        } finally {
            if (redis != null) {
                redis.close();
            }
        }
    }

    /** A killed master comes back as a replica, so each test starts from three masters with a replica each. */
    @AfterEach
    void restartKilledNodes() throws Exception {
        redis.restartKilled();
    }

    @Test
    void duplicatesSplitAcrossInstances_oneChargeAndOneAnswerEach_replayedFromRedis() {
        List<PayRequest> requests = clientA.newRequests(ORDERS);
        clientA.sandbox("ok", SLOW_CHARGE_MS, ORDERS);
        double pubsubReplays = replays("pubsub");

        List<List<Answer>> storm = Concurrently.bursts(ORDERS, COPIES, ORDERS * COPIES, STORM_BOUND,
                (order, copy) -> client(copy).pay(requests.get(order)));
        double redisReplays = replays("redis");
        List<List<Answer>> late = requests.stream().map(r -> List.of(clientA.pay(r), clientB.pay(r))).toList();

        List<Executable> checks = new ArrayList<>();
        for (int i = 0; i < ORDERS; i++) {
            PayRequest request = requests.get(i);
            List<Answer> stormCopies = storm.get(i);
            List<Answer> lateCopies = late.get(i);
            List<Answer> all = Stream.concat(stormCopies.stream(), lateCopies.stream()).toList();
            checks.add(() -> assertAll(request.orderNo(),
                    () -> assertEquals(1, distinct(all).size(), "distinct answers: " + distinct(all)),
                    () -> assertEquals(200, all.get(0).status(), all.get(0).toString()),
                    () -> assertEquals(COPIES - 1, stormCopies.stream().filter(Answer::isReplay).count(),
                            "storm copies answered as replays"),
                    () -> assertTrue(lateCopies.stream().allMatch(Answer::isReplay), "late copies: " + lateCopies),
                    () -> assertBooks(request)));
        }
        assertAll(checks);
        // all of them, but that one Redis call timing out on a loaded machine is latency, not a fast path missing
        double lateFromRedis = replays("redis") - redisReplays;
        assertAll("where replays came from",
                () -> assertTrue(lateFromRedis >= 2 * ORDERS - 1, lateFromRedis + " of " + 2 * ORDERS
                        + " late copies replayed from Redis"),
                () -> assertTrue(replays("pubsub") > pubsubReplays, "no waiter of the storm was woken by pub/sub"));
    }

    @Test
    void masterKilledMidStorm_oneChargeAndOneFinalAnswerEach_andRedisServesAgainAfterFailover() throws Exception {
        List<PayRequest> requests = clientA.newRequests(KILL_ORDERS);
        String victim = hashTag(requests.get(0));
        clientA.sandbox("ok", KILL_CHARGE_MS, KILL_ORDERS);
        redis.awaitHealthy(READY_BOUND);

        CountDownLatch firstSent = new CountDownLatch(1);
        AtomicLong killedAt = new AtomicLong(Long.MAX_VALUE);
        CompletableFuture<Integer> killed = CompletableFuture.supplyAsync(() -> {
            try {
                if (!firstSent.await(STORM_BOUND.toSeconds(), TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the storm never began");
                }
                sleep(KILL_AFTER_MS);
                killedAt.set(System.nanoTime());
                return redis.killMasterOf(victim);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        });
        List<List<Timed>> storm = Concurrently.bursts(KILL_ORDERS, KILL_COPIES, KILL_ORDERS * KILL_COPIES,
                STORM_BOUND, (order, copy) -> {
                    sleep(copy * COPY_SPACING_MS);
                    firstSent.countDown();
                    long sent = System.nanoTime();
                    Answer answer = client(copy).payUntilFinal(requests.get(order), FINAL_BOUND);
                    return new Timed(answer, sent, System.nanoTime());
                });
        int deadPort = killed.get(10, TimeUnit.SECONDS);

        List<Timed> all = storm.stream().flatMap(List::stream).toList();
        long sentAfter = all.stream().filter(t -> t.sentNanos() > killedAt.get()).count();
        long doneAfter = all.stream().filter(t -> t.doneNanos() > killedAt.get()).count();
        assertTrue(sentAfter > 0 && doneAfter > 0 && sentAfter < all.size(),
                "the kill did not strike mid-storm: " + sentAfter + " of " + all.size() + " copies sent after it");
        List<Executable> checks = new ArrayList<>();
        for (int i = 0; i < KILL_ORDERS; i++) {
            PayRequest request = requests.get(i);
            List<Answer> answers = storm.get(i).stream().map(Timed::answer).toList();
            checks.add(() -> assertAll(request.orderNo(),
                    () -> assertEquals(1, distinct(answers).size(), "distinct final answers: " + distinct(answers)),
                    () -> assertEquals(200, answers.get(0).status(), answers.get(0).toString()),
                    () -> assertBooks(request)));
        }
        assertAll(checks);

        redis.awaitFailover(victim, deadPort);
        int promoted = redis.masterOf(victim);
        assertAll("after the failover, duplicates on B of answers A cached are replayed from Redis",
                () -> assertReplayedFromRedis("on the promoted master " + promoted, port -> port == promoted),
                () -> assertReplayedFromRedis("on a master that stayed up", port -> port != promoted));
    }

    @Test
    void masterKilled_answersCachedOnTheOtherMastersAreStillReplayedFromRedis() throws Exception {
        PayRequest onVictim = clientA.newRequest();
        int victim = redis.masterOf(hashTag(onVictim));
        List<PayRequest> elsewhere = new ArrayList<>();
        for (int i = 0; i < RECOVERY_PAYMENTS && elsewhere.size() < STEADY_ANSWERS; i++) {
            PayRequest request = clientA.newRequest();
            if (redis.masterOf(hashTag(request)) != victim) {
                assertEquals(200, clientA.pay(request).status(), "the first payment of " + request.orderNo());
                elsewhere.add(request);
            }
        }
        redis.awaitHealthy(READY_BOUND);
        double fromRedis = replays(instanceB, "redis");

        long killedAt = System.nanoTime();
        redis.killMasterOf(hashTag(onVictim));
        // well within the dead master's node timeout (2 s): the cluster has not even marked it failed yet
        List<Answer> replayed = elsewhere.stream().map(clientB::pay).toList();
        long replayedInMs = (System.nanoTime() - killedAt) / 1_000_000;

        assertEquals(STEADY_ANSWERS, elsewhere.size(), "payments on the masters that stay up");
        assertAll("replays on B in the " + replayedInMs + " ms after the master on " + victim + " was killed",
                () -> assertTrue(replayed.stream().allMatch(a -> a.status() == 200 && a.isReplay()), replayed.toString()),
                // all of them, but that one Redis call timing out on a loaded machine is latency
                () -> assertTrue(replays(instanceB, "redis") - fromRedis >= STEADY_ANSWERS - 1,
                        replays(instanceB, "redis") - fromRedis + " of " + STEADY_ANSWERS + " replayed from Redis"));
    }

    /**
     * A new payment on A whose token's keys live on a master {@code where} accepts is replayed from Redis
     * on B. Up to {@link #RECOVERY_PAYMENTS} payments, {@link #RECOVERY_PAUSE_MS} apart: the fast path may
     * need a moment after the failover, and a payment only counts on the master it was meant for.
     */
    private static void assertReplayedFromRedis(String what, IntPredicate where) {
        List<String> misses = new ArrayList<>();
        for (int i = 0; i < RECOVERY_PAYMENTS; i++) {
            PayRequest request = clientA.newRequest();
            if (!where.test(redis.masterOf(hashTag(request)))) {
                continue;
            }
            Answer first = clientA.pay(request);
            double fromRedis = replays(instanceB, "redis");
            Answer duplicate = clientB.pay(request);
            assertAll(what, () -> assertEquals(200, first.status(), first.toString()),
                    () -> assertEquals(first.body(), duplicate.body()),
                    () -> assertTrue(duplicate.isReplay(), duplicate.toString()));
            if (replays(instanceB, "redis") == fromRedis + 1) {
                return;
            }
            misses.add("not from Redis (" + readiness(instanceA) + " on A, " + readiness(instanceB) + " on B)");
            sleep(RECOVERY_PAUSE_MS);
        }
        fail("no duplicate of a payment " + what + " was replayed from Redis: " + misses);
    }

    /** One payment record, one charge call and one charge at the channel, and the order paid. */
    private static void assertBooks(PayRequest request) {
        Books books = clientA.books(request.orderNo());
        assertAll(request.orderNo() + ": " + books,
                () -> assertEquals(1, books.paymentsFor(request.requestNo()), "payment records"),
                () -> assertEquals(1, books.charges(), "charges at the channel"),
                () -> assertEquals(1, books.attempts(), "charge calls at the channel"),
                () -> assertEquals("PAID", books.orderStatus(), "order status"));
    }

    /** Every key of a token shares this hash tag, so the tag's slot is the one its keys live on. */
    private static String hashTag(PayRequest request) {
        return "{" + MERCHANT + ":" + request.token() + "}";
    }

    /** Copies alternate between the instances. */
    private static PayClient client(int copy) {
        return copy % 2 == 0 ? clientA : clientB;
    }

    private static AppProcess instance(String name) throws Exception {
        return AppProcess.named(name)
                .env("QUARKUS_REDIS_CLIENT_TYPE", "cluster")
                .env("QUARKUS_REDIS_HOSTS", redis.hosts())
                .env("QUARKUS_DATASOURCE_REACTIVE_URL", "mysql://127.0.0.1:3306/" + DATABASE)
                .env("QUARKUS_DATASOURCE_JDBC_URL", SERVER + DATABASE)
                .env("PAYONCE_CHANNEL_TIMEOUT", "3s");
    }

    private static void recreateDatabase() throws Exception {
        try (Connection c = DriverManager.getConnection(SERVER, "root", "");
                Statement s = c.createStatement()) {
            s.execute("DROP DATABASE IF EXISTS `" + DATABASE + "`");
            s.execute("CREATE DATABASE `" + DATABASE + "`");
        }
    }

    /** Replays both instances served from {@code source}. */
    private static double replays(String source) {
        return replays(instanceA, source) + replays(instanceB, source);
    }

    private static double replays(AppProcess app, String source) {
        String series = "payonce_replays_total{source=\"" + source + "\"} ";
        return app.management().get("/q/metrics").then().statusCode(200)
                .extract().asString().lines().filter(l -> l.startsWith(series))
                .mapToDouble(l -> Double.parseDouble(l.substring(series.length()).trim())).sum();
    }

    /** The "Redis fast path" readiness check's data, as {@code redis=..., wake_ups=...}. */
    private static String readiness(AppProcess app) {
        JsonPath json = JsonPath.from(app.management().get("/q/health/ready")
                .asString());
        String check = "checks.find { it.name == 'Redis fast path' }.data";
        return "redis=" + json.getString(check + ".redis") + ", wake_ups=" + json.getString(check + ".wake_ups");
    }

    private static List<String> distinct(List<Answer> answers) {
        return answers.stream().map(a -> a.status() + " " + a.body()).distinct().toList();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
