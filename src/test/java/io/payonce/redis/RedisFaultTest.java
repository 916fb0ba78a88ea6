package io.payonce.redis;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.ledgerAttempts;
import static io.payonce.support.Fixtures.ledgerCharges;
import static io.payonce.support.Fixtures.orderStatus;
import static io.payonce.support.Fixtures.payAnswer;
import static io.payonce.support.Fixtures.payRequest;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.sandbox;
import static io.payonce.support.Fixtures.sandboxNormal;
import static io.payonce.support.Fixtures.token;
import static io.payonce.support.Operations.awaitRedis;
import static io.payonce.support.Operations.readiness;
import static io.payonce.support.Operations.redisFallbacks;
import static io.payonce.support.Operations.replays;
import static io.payonce.support.Operations.stopped;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.stream.IntStream;

import jakarta.inject.Inject;

import io.payonce.support.Answer;
import io.payonce.support.Concurrently;
import io.payonce.support.Fixtures;
import io.payonce.support.Operations.Readiness;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.payonce.support.ThrowawayRedis;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Redis is an optimisation: cut, flushed, slow or partitioned in the middle of a storm of duplicates, it
 * changes latency and never an outcome. The service talks to a throwaway Redis through a proxy the test
 * controls; the shared Redis is never touched.
 */
@QuarkusTest
@QuarkusTestResource(value = ThrowawayRedis.class, restrictToAnnotatedClass = true)
class RedisFaultTest {

    private static final int ORDERS = 8;
    private static final int COPIES = 20;
    private static final int THREADS = 64;
    private static final Duration STORM_BOUND = Duration.ofSeconds(30);
    /** Slow enough that the copies of an order arrive while its first execution is at the channel. */
    private static final long SLOW_CHANNEL_MS = 150;
    /**
     * When a fault strikes, counted from the storm's first request: early, while the fast path is
     * still in use (under a storm's load its health probe may soon turn it off by itself).
     */
    private static final long FAULT_AFTER_MS = 100;

    /** When in the storm a fault strikes. */
    private enum Strike {
        /** {@link #FAULT_AFTER_MS} after the first request was sent. */
        EARLY,
        /** As the first answer arrives: Redis then holds a cached answer and in-flight ownership keys. */
        AT_FIRST_ANSWER
    }
    /** Above the service's 100 ms Redis timeout. */
    private static final long SLOW_REDIS_MS = 300;
    /**
     * The pub/sub test's first execution: under the test profile's 2 s channel timeout, so it succeeds.
     * With the duplicate sent {@link #DUPLICATE_AFTER_MS} later, the first answer falls in the middle of
     * the waiter's longest back-off sleep (it looks at about +0.63 s and +1.27 s after it starts waiting),
     * so a duplicate answered at that instant was woken by pub/sub and not by its own poll.
     */
    private static final long SLOW_CHARGE_MS = 1_200;
    private static final long DUPLICATE_AFTER_MS = 300;
    private static final Duration HEALTH_BOUND = Duration.ofSeconds(10);
    private static final int RECOVERY_TRIES = 3;

    @Inject
    TestDatabase db;

    @Inject
    RedisFastPath fastPath;

    private ExecutorService background;

    /** An answer with the instants its request was sent and its answer read. */
    private record Timed(Answer answer, long sentNanos, long doneNanos) {
    }

    /** A storm's answers per order, and when the fault struck, whether the fast path was on then, and what it met. */
    private record Storm(List<List<Timed>> answers, String strike) {
    }

    @BeforeEach
    void setUp() {
        db.clean();
        sandboxNormal();
        background = Executors.newFixedThreadPool(4);
        // every test starts from a healthy fast path, whatever the previous test did to it
        awaitRedis("up", "pubsub", HEALTH_BOUND);
    }

    @AfterEach
    void tearDown() throws InterruptedException {
        ThrowawayRedis.proxy().delay(0);
        ThrowawayRedis.proxy().restore();
        background.shutdownNow();
        background.awaitTermination(5, TimeUnit.SECONDS);
    }

    @Test
    void cachedAnswer_isReplayedFromRedis() {
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        Answer first = payAnswer(token, orderNo, requestNo);
        double redisReplays = replays("redis");
        double mysqlReplays = replays("mysql");
        double stoppedByRedis = stopped("redis");

        Answer duplicate = payAnswer(token, orderNo, requestNo);

        assertAll(
                () -> assertEquals(200, first.status(), first.body()),
                () -> assertNull(first.replayed(), "the first execution is no replay"),
                () -> assertEquals(200, duplicate.status(), duplicate.body()),
                () -> assertEquals(first.body(), duplicate.body()),
                () -> assertEquals("true", duplicate.replayed()),
                () -> assertEquals(redisReplays + 1, replays("redis"), "replays from redis"),
                () -> assertEquals(mysqlReplays, replays("mysql"), "replays from mysql"),
                () -> assertEquals(stoppedByRedis + 1, stopped("redis"), "duplicates stopped by redis"),
                () -> assertEquals(1, ledgerAttempts(MERCHANT, orderNo), "charge calls at the channel"));
    }

    @Test
    void healthyRedisDuringStorm_staysUpInReadiness() throws Exception {
        List<PayRequest> requests = requests();
        sandbox("ok", SLOW_CHANNEL_MS, ORDERS);
        double fallbacks = redisFallbacks();
        AtomicBoolean stormOver = new AtomicBoolean();
        CompletableFuture<List<String>> seen = CompletableFuture.supplyAsync(() -> {
            List<String> states = new ArrayList<>();
            // a sample every 50 ms for as long as the storm lasts: readiness is watched, not awaited
            for (int i = 0; i < 300 && !stormOver.get(); i++) {
                states.add(readiness().redis());
                sleepQuietly(50);
            }
            return states;
        }, background);
        List<List<Timed>> answers;
        try {
            answers = storm(requests);
        } finally {
            stormOver.set(true);
        }

        List<String> states = seen.get(20, TimeUnit.SECONDS);
        double fallbacksNow = redisFallbacks();
        assertAll(outcomes(requests, answers));
        assertEquals(List.of("up"), states.stream().distinct().toList(), "readiness of a healthy Redis during the storm,"
                + " sampled as " + states + " (" + (fallbacksNow - fallbacks) + " fallbacks)");
    }

    @Test
    void redisGoesAwayDuringStorm_outcomesUnchanged() throws Exception {
        List<PayRequest> requests = requests();
        sandbox("ok", SLOW_CHANNEL_MS, ORDERS);
        double fallbacks = redisFallbacks();

        Storm storm = stormWithFault(requests, Strike.EARLY, () -> ThrowawayRedis.proxy().cut());

        assertAll(outcomes(requests, storm.answers()));
        assertFaultMetTheFastPath(fallbacks, storm);
        Readiness down = awaitRedis("degraded", "polling", HEALTH_BOUND);
        assertEquals("UP", down.status(), "readiness with Redis away: " + down);

        ThrowawayRedis.proxy().restore();

        Readiness back = awaitRedis("up", "pubsub", HEALTH_BOUND);
        assertEquals("UP", back.status(), "readiness with Redis back: " + back);
        assertReplayedFromRedisAgain();
    }

    @Test
    void flushAllDuringStorm_outcomesUnchanged() throws Exception {
        List<PayRequest> requests = requests();
        sandbox("ok", SLOW_CHANNEL_MS, ORDERS);
        List<String> keysFlushed = new ArrayList<>();

        Storm storm = stormWithFault(requests, Strike.AT_FIRST_ANSWER, () -> {
            keysFlushed.add(ThrowawayRedis.command("DBSIZE"));
            assertEquals("+OK", ThrowawayRedis.command("FLUSHALL"));
        });
        List<Answer> lateCopies = requests.stream().map(Fixtures::payAnswer)
                .toList();

        assertAll(outcomes(requests, storm.answers()));
        assertAll("a late copy of each order, after the flush", IntStream.range(0, ORDERS).mapToObj(i -> (Executable) () -> {
            Answer stormAnswer = storm.answers().get(i).get(0).answer();
            assertEquals(stormAnswer.status(), lateCopies.get(i).status(), requests.get(i).orderNo());
            assertEquals(stormAnswer.body(), lateCopies.get(i).body(), requests.get(i).orderNo());
        }));
        assertTrue(!keysFlushed.isEmpty() && !":0".equals(keysFlushed.get(0)),
                "FLUSHALL found nothing to flush (DBSIZE " + keysFlushed + "; " + storm.strike() + ")");
        assertEquals("UP", readiness().status());
    }

    @Test
    void slowRedis_outcomesUnchanged() throws Exception {
        List<PayRequest> requests = requests();
        sandbox("ok", SLOW_CHANNEL_MS, ORDERS);
        double fallbacks = redisFallbacks();
        ThrowawayRedis.proxy().delay(SLOW_REDIS_MS);
        List<List<Timed>> answers;
        try {
            answers = storm(requests);
        } finally {
            ThrowawayRedis.proxy().delay(0);
        }

        assertAll(outcomes(requests, answers));
        assertFaultMetTheFastPath(fallbacks, null);
        assertEquals("UP", readiness().status());
    }

    @Test
    void partitionedRedisDuringStorm_outcomesUnchanged() throws Exception {
        List<PayRequest> requests = requests();
        sandbox("ok", SLOW_CHANNEL_MS, ORDERS);
        double fallbacks = redisFallbacks();

        Storm storm = stormWithFault(requests, Strike.EARLY, () -> ThrowawayRedis.proxy().hang());

        assertAll(outcomes(requests, storm.answers()));
        assertFaultMetTheFastPath(fallbacks, storm);
        Readiness down = awaitRedis("degraded", null, HEALTH_BOUND);
        assertEquals("UP", down.status(), "readiness with Redis partitioned: " + down);

        ThrowawayRedis.proxy().restore();

        awaitRedis("up", "pubsub", HEALTH_BOUND);
        assertReplayedFromRedisAgain();
    }

    @Test
    void duplicateWhileFirstRuns_isWokenByPubSub() throws Exception {
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        double pubsubReplays = replays("pubsub");
        double redisReplays = replays("redis");
        double mysqlReplays = replays("mysql");
        sandbox("ok", SLOW_CHARGE_MS, 1);
        CompletableFuture<Timed> first = timedInBackground(token, orderNo, requestNo);
        // the spacing that puts the first answer inside the waiter's longest back-off sleep
        Thread.sleep(DUPLICATE_AFTER_MS);
        CompletableFuture<Timed> duplicate = timedInBackground(token, orderNo, requestNo);

        Timed original = first.get(15, TimeUnit.SECONDS);
        Timed copy = duplicate.get(15, TimeUnit.SECONDS);

        long gapMs = Math.abs(copy.doneNanos() - original.doneNanos()) / 1_000_000;
        String wakeUp = String.format("the duplicate (sent %d ms after the first, which took %d ms) answered %d ms"
                + " after the first; replays pubsub +%.0f, redis +%.0f, mysql +%.0f",
                (copy.sentNanos() - original.sentNanos()) / 1_000_000, original.answer().elapsedMs(), gapMs,
                replays("pubsub") - pubsubReplays, replays("redis") - redisReplays, replays("mysql") - mysqlReplays);
        assertAll(wakeUp,
                () -> assertEquals(200, original.answer().status(), original.answer().body()),
                () -> assertNull(original.answer().replayed(), "the first execution is no replay"),
                () -> assertTrue(copy.sentNanos() < original.doneNanos(), "the duplicate was sent too late"),
                () -> assertEquals(200, copy.answer().status(), copy.answer().body()),
                () -> assertEquals(original.answer().body(), copy.answer().body()),
                () -> assertEquals("true", copy.answer().replayed()),
                () -> assertEquals(pubsubReplays + 1, replays("pubsub"), "replays woken by pub/sub"),
                () -> assertTrue(gapMs < 150, "the duplicate answered " + gapMs + " ms after the first"),
                () -> assertEquals(1, ledgerAttempts(MERCHANT, orderNo), "charge calls at the channel"));
    }

    /** Redis calls failed over to MySQL: the fault struck while the fast path was in use. */
    private static void assertFaultMetTheFastPath(double fallbacksBefore, Storm storm) {
        double fallbacks = redisFallbacks();
        assertTrue(fallbacks > fallbacksBefore, "Redis fallbacks " + fallbacksBefore + " -> " + fallbacks
                + ": the fault met no Redis call" + (storm == null ? "" : " (" + storm.strike() + ")"));
    }

    /**
     * A new payment's duplicate is replayed from Redis again. Up to {@link #RECOVERY_TRIES} payments, as
     * one Redis call timing out on a loaded machine is latency, not a fast path that failed to come back.
     */
    private void assertReplayedFromRedisAgain() {
        List<String> misses = new ArrayList<>();
        for (int i = 0; i < RECOVERY_TRIES; i++) {
            String orderNo = pendingOrder();
            String token = token();
            String requestNo = id("req");
            Answer first = payAnswer(token, orderNo, requestNo);
            double redisReplays = replays("redis");
            double fallbacks = redisFallbacks();

            Answer duplicate = payAnswer(token, orderNo, requestNo);

            assertAll("after Redis came back",
                    () -> assertEquals(200, first.status(), first.body()),
                    () -> assertEquals(first.body(), duplicate.body()),
                    () -> assertEquals("true", duplicate.replayed()));
            if (replays("redis") == redisReplays + 1) {
                return;
            }
            misses.add("not from redis (" + (redisFallbacks() - fallbacks) + " fallbacks, " + readiness() + ")");
        }
        fail("after Redis came back, no duplicate of " + RECOVERY_TRIES + " payments was replayed from redis: "
                + misses);
    }

    private static List<PayRequest> requests() {
        return IntStream.range(0, ORDERS).mapToObj(i -> payRequest()).toList();
    }

    private static List<List<Timed>> storm(List<PayRequest> requests) {
        return storm(requests, new CountDownLatch(0), new CountDownLatch(0));
    }

    private static List<List<Timed>> storm(List<PayRequest> requests, CountDownLatch sent, CountDownLatch answered) {
        return Concurrently.bursts(ORDERS, COPIES, THREADS, STORM_BOUND, (order, copy) -> {
            sent.countDown();
            long sentAt = System.nanoTime();
            Answer answer = payAnswer(requests.get(order));
            long doneAt = System.nanoTime();
            answered.countDown();
            return new Timed(answer, sentAt, doneAt);
        });
    }

    /** The storm, with {@code fault} striking from another thread while it runs (checked afterwards). */
    private Storm stormWithFault(List<PayRequest> requests, Strike when, Runnable fault) throws Exception {
        CountDownLatch sent = new CountDownLatch(1);
        CountDownLatch answered = new CountDownLatch(1);
        AtomicBoolean fastPathOn = new AtomicBoolean();
        CompletableFuture<Long> struck = CompletableFuture.supplyAsync(() -> {
            try {
                CountDownLatch trigger = when == Strike.EARLY ? sent : answered;
                if (!trigger.await(STORM_BOUND.toSeconds(), TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the storm never reached the strike");
                }
                if (when == Strike.EARLY) {
                    // spacing the fault into the storm
                    Thread.sleep(FAULT_AFTER_MS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
            fastPathOn.set(fastPath.available());
            fault.run();
            return System.nanoTime();
        }, background);

        List<List<Timed>> answers = storm(requests, sent, answered);

        long struckAt = struck.get(10, TimeUnit.SECONDS);
        List<Timed> all = answers.stream().flatMap(List::stream).toList();
        long firstSent = all.stream().mapToLong(Timed::sentNanos).min().orElseThrow();
        long lastDone = all.stream().mapToLong(Timed::doneNanos).max().orElseThrow();
        long doneAfter = all.stream().filter(t -> t.doneNanos() > struckAt).count();
        long sentAfter = all.stream().filter(t -> t.sentNanos() > struckAt).count();
        String strike = String.format("the fault struck %d ms into a %d ms storm, the fast path %s; %d of %d"
                + " requests were sent and %d answered after it", (struckAt - firstSent) / 1_000_000,
                (lastDone - firstSent) / 1_000_000, fastPathOn.get() ? "on" : "already off", sentAfter, all.size(),
                doneAfter);
        assertTrue(sentAfter < all.size() && doneAfter > 0, "the fault did not strike mid-storm: " + strike);
        return new Storm(answers, strike);
    }

    private List<Executable> outcomes(List<PayRequest> requests, List<List<Timed>> answers) {
        List<Executable> checks = new ArrayList<>();
        for (int i = 0; i < ORDERS; i++) {
            PayRequest request = requests.get(i);
            List<Answer> copies = answers.get(i).stream().map(Timed::answer).toList();
            Answer first = copies.get(0);
            checks.add(() -> assertAll(request.orderNo(),
                    () -> assertEquals(List.of(200), distinct(copies, Answer::status), "distinct status codes"),
                    () -> assertEquals(1, distinct(copies, Answer::body).size(),
                            "distinct bodies: " + distinct(copies, Answer::body)),
                    () -> assertEquals("PAID", JsonPath.from(first.body()).getString("status"), first.body()),
                    () -> assertEquals(COPIES - 1, copies.stream().filter(Answer::isReplay).count(),
                            "copies answered with Idempotent-Replayed: true"),
                    () -> assertEquals(1, db.payments(MERCHANT, request.orderNo()), "payment records"),
                    () -> assertEquals(1, ledgerCharges(MERCHANT, request.orderNo()), "charges at the channel"),
                    () -> assertEquals(1, ledgerAttempts(MERCHANT, request.orderNo()),
                            "charge calls at the channel"),
                    () -> assertEquals("PAID", orderStatus(MERCHANT, request.orderNo()), "order status")));
        }
        return checks;
    }

    private CompletableFuture<Timed> timedInBackground(String token, String orderNo, String requestNo) {
        return CompletableFuture.supplyAsync(() -> {
            long sent = System.nanoTime();
            Answer answer = payAnswer(token, orderNo, requestNo);
            return new Timed(answer, sent, System.nanoTime());
        }, background);
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static <T> List<T> distinct(List<Answer> copies, Function<Answer, T> part) {
        return copies.stream().map(part).distinct().toList();
    }
}
