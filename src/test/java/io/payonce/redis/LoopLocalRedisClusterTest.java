package io.payonce.redis;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Await;
import io.payonce.support.RedisCluster;
import io.smallrye.mutiny.TimeoutException;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Vertx;
import io.vertx.core.impl.ContextInternal;
import io.vertx.core.impl.VertxInternal;
import io.vertx.mutiny.redis.client.Command;
import io.vertx.mutiny.redis.client.Redis;
import io.vertx.mutiny.redis.client.RedisConnection;
import io.vertx.mutiny.redis.client.Request;
import io.vertx.mutiny.redis.client.Response;

/**
 * On a Redis Cluster each event loop's commands go to the master of their key's slot (computed as the cluster
 * computes it), scripts included;
 * a wake-up published for any slot reaches a subscriber on any node; and a dead master fails only the
 * commands for its own slots, which its replica serves once promoted. A cluster of the test's own, without
 * the application around the clients.
 */
class LoopLocalRedisClusterTest {

    private static final Duration CALL_BOUND = Duration.ofSeconds(5);
    private static final Duration FAILOVER_BOUND = Duration.ofSeconds(20);

    private static RedisCluster redis;
    private static Vertx vertx;
    private LoopLocalRedis loopLocal;
    private ContextInternal loop;

    @BeforeAll
    static void startCluster() throws Exception {
        redis = RedisCluster.start("looplocal");
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void stopCluster() throws Exception {
        try {
            if (vertx != null) {
                vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
            }
        } finally {
            if (redis != null) {
                redis.close();
            }
        }
    }

    @BeforeEach
    void clients() throws Exception {
        // no Quarkus client: every call here is made on an event loop, once the slots are known
        loopLocal = new LoopLocalRedis(vertx, null, redis.hosts(), "cluster", Duration.ofSeconds(1), CALL_BOUND, 4, 64);
        loop = ((VertxInternal) vertx).createEventLoopContext();
        readSlots(loopLocal);
    }

    /** Until the router has read the slot table: a probe bounded by 1 s may fail on a loaded machine, the next succeed. */
    private void readSlots(LoopLocalRedis router) {
        Await.until("the slot table to be read", FAILOVER_BOUND, () -> {
            try {
                onLoop(router::probe);
                return true;
            } catch (ExecutionException notYet) {
                return false;
            }
        });
    }

    @AfterEach
    void closeClients() {
        loopLocal.close();
    }

    @Test
    void keysOnEveryMaster_areWrittenAndReadBack_eachThroughItsMaster() throws Exception {
        Map<Integer, String> keyOfMaster = keysOnEachMaster();

        for (String key : keyOfMaster.values()) {
            onLoop(() -> loopLocal.send(Command.SET, key, "v-" + key));
        }

        assertEquals(3, keyOfMaster.size(), "masters: " + keyOfMaster.keySet());
        for (Map.Entry<Integer, String> entry : keyOfMaster.entrySet()) {
            String key = entry.getValue();
            assertAll(key,
                    () -> assertEquals("v-" + key, onLoop(() -> loopLocal.send(Command.GET, key)).toString()),
                    () -> assertEquals(entry.getKey(), redis.masterOf(key)),
                    () -> assertEquals("v-" + key, redis.get(entry.getKey(), key), "held by its master"));
        }
    }

    @Test
    void offAnEventLoop_commandsGoToTheMasterAllTheSame() {
        String key = "{" + UUID.randomUUID() + "}:k";

        // on the test's own thread, and with no Quarkus client to fall back on
        loopLocal.send(Command.SET, key, "off-loop").await().atMost(CALL_BOUND);

        assertEquals("off-loop", redis.get(redis.masterOf(key), key));
    }

    @Test
    void script_runsOnTheMasterOfItsKeys() throws Exception {
        String tag = "{" + UUID.randomUUID() + "}";
        String script = "redis.call('SET', KEYS[1], ARGV[1]) redis.call('DEL', KEYS[2]) return 1";
        onLoop(() -> loopLocal.send(Command.SET, tag + ":own", "1"));

        Response ran = onLoop(() -> loopLocal.send(Command.EVAL, script, "2", tag + ":res", tag + ":own", "answer"));

        assertAll(() -> assertEquals(1, ran.toInteger()),
                () -> assertEquals("answer", redis.get(redis.masterOf(tag), tag + ":res")),
                () -> assertEquals("", redis.get(redis.masterOf(tag), tag + ":own")));
    }

    @Test
    void publishedForAnySlot_reachesASubscriberOnAnyNode() throws Exception {
        RedisConnection subscriber = onLoop(loopLocal::subscriber);
        onLoop(() -> subscriber.send(Request.cmd(Command.PSUBSCRIBE).arg("po:*:done")));
        try {
            List<String> channels = new ArrayList<>();
            for (String key : keysOnEachMaster().values()) {
                channels.add("po:" + key + ":done");
            }

            for (String channel : channels) {
                CompletableFuture<Response> next = new CompletableFuture<>();
                subscriber.handler(message -> {
                    if ("pmessage".equals(message.get(0).toString())) {
                        next.complete(message);
                    }
                });
                onLoop(() -> loopLocal.send(Command.PUBLISH, channel, "payload"));
                Response message = next.get(CALL_BOUND.toMillis(), TimeUnit.MILLISECONDS);
                assertAll(channel, () -> assertEquals(channel, message.get(2).toString()),
                        () -> assertEquals("payload", message.get(3).toString()));
            }
        } finally {
            subscriber.close().await().atMost(CALL_BOUND);
        }
    }

    @Test
    void deadMaster_failsOnlyTheKeysOfItsSlots_andItsReplicaServesThemOncePromoted() throws Exception {
        Map<Integer, String> keyOfMaster = keysOnEachMaster();
        List<String> keys = new ArrayList<>(keyOfMaster.values());
        String onVictim = keys.get(0);
        String elsewhere = keys.get(1);
        for (String key : keys) {
            onLoop(() -> loopLocal.send(Command.SET, key, "v"));
        }
        redis.awaitHealthy(FAILOVER_BOUND);

        int dead = redis.killMasterOf(onVictim);
        // before the cluster even marks the master failed (its node timeout is 2 s)
        String stillServed = onLoop(() -> loopLocal.send(Command.GET, elsewhere)).toString();
        Throwable victimFails = failureOf(() -> loopLocal.send(Command.GET, onVictim));
        redis.awaitFailover(onVictim, dead);
        Response afterFailover = Await.until("the key's new master to answer through the loop's clients",
                FAILOVER_BOUND, () -> {
                    try {
                        return onLoop(() -> loopLocal.send(Command.SET, onVictim, "w"));
                    } catch (ExecutionException notYet) {
                        return null;
                    }
                }, answer -> answer != null);

        assertAll(() -> assertEquals("v", stillServed, "a key of a live master"),
                () -> assertTrue(victimFails != null, "a key of the dead master failed"),
                () -> assertEquals("OK", afterFailover.toString()),
                () -> assertNotEquals(dead, redis.masterOf(onVictim)),
                () -> assertEquals("w", redis.get(redis.masterOf(onVictim), onVictim)));
    }

    @Test
    void slotOfEveryKey_isTheOneTheClusterGivesIt() {
        List<String> keys = new ArrayList<>(List.of("", "{}", "{", "}", "}{", "}a{b}", "a{}{b}", "{{b}}", "{b}}",
                "a{b}{c}", "po:{m:tok}:own", "ключ", "{ключ}:own", "钥匙{标签}", "🔑{🏷}", "é{}", "a\0b"));
        // braces, ASCII, and characters of two, three and four UTF-8 bytes, in any order and number
        String[] pieces = {"{", "}", "a", "Z", "0", ":", "-", " ", "é", "ж", "中", "🔑"};
        Random random = new Random(5);
        for (int i = 0; i < 2_000; i++) {
            StringBuilder key = new StringBuilder();
            for (int length = random.nextInt(16); length > 0; length--) {
                key.append(pieces[random.nextInt(pieces.length)]);
            }
            keys.add(key.toString());
        }

        List<Response> slots = askEachSlot(keys);

        List<String> differing = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            if (slots.get(i).toInteger() != ClusterSlots.slotOf(keys.get(i))) {
                differing.add(keys.get(i) + " (" + slots.get(i) + ", not " + ClusterSlots.slotOf(keys.get(i)) + ")");
            }
        }
        assertEquals(List.of(), differing, "keys whose slot differs from CLUSTER KEYSLOT's");
    }

    /** CLUSTER KEYSLOT of each key, as a node of the cluster answers, in one round trip. */
    private static List<Response> askEachSlot(List<String> keys) {
        Redis node = Redis.createClient(io.vertx.mutiny.core.Vertx.newInstance(vertx), redis.anyLiveNode());
        try {
            return node.batch(keys.stream().map(key -> Request.cmd(Command.CLUSTER).arg("KEYSLOT").arg(key)).toList())
                    .await().atMost(CALL_BOUND);
        } finally {
            node.close();
        }
    }

    @Test
    void callQueuedForAHungNode_whoseCallerGaveUp_isNeverWritten() throws Exception {
        // GIVEN one connection per node, so that a call written to a hung node holds up the calls after it
        Duration bound = Duration.ofMillis(200);
        LoopLocalRedis onePerNode = new LoopLocalRedis(vertx, null, redis.hosts(), "cluster", Duration.ofSeconds(1),
                bound, 1, 64);
        String tag = "{" + UUID.randomUUID() + "}";
        try {
            readSlots(onePerNode);
            int hung = redis.hangMasterOf(tag);
            CompletableFuture<Response> written = new CompletableFuture<>();
            CompletableFuture<Response> queued = new CompletableFuture<>();

            // WHEN a call is written to the hung node's connection and another waits for it, past its bound
            loop.runOnContext(v -> {
                onePerNode.send(Command.SET, tag + ":written", "1")
                        .subscribe().with(written::complete, written::completeExceptionally);
                onePerNode.send(Command.SET, tag + ":queued", "1", "NX", "PX", "60000")
                        .ifNoItem().after(bound).fail()
                        .subscribe().with(queued::complete, queued::completeExceptionally);
            });
            Throwable gaveUp = failureOf(queued);
            redis.resume(hung);

            // THEN once the node answers again, the call that was written is executed, the one that waited is not
            Optional<String> queuedKey = Await.until("a read through the node's one connection to answer",
                    FAILOVER_BOUND, () -> read(onePerNode, tag + ":queued"), answer -> answer != null);
            assertAll(() -> assertInstanceOf(TimeoutException.class, gaveUp, "its caller gave up at its bound"),
                    () -> assertEquals("OK", written.get(CALL_BOUND.toMillis(), TimeUnit.MILLISECONDS).toString()),
                    () -> assertEquals(Optional.empty(), queuedKey, "the queued SET NX was applied after its bound"),
                    () -> assertEquals("", redis.get(hung, tag + ":queued")));
        } finally {
            onePerNode.close();
        }
    }

    @Test
    void scriptOnKeysOfASlotHalfMoved_isSentAgainOnTryAgain_andRunsOnceTheMoveEnds() throws Exception {
        String tag = "{" + UUID.randomUUID() + "}";
        String script = "redis.call('SET', KEYS[1], ARGV[1]) redis.call('DEL', KEYS[2]) return 1";
        onLoop(() -> loopLocal.send(Command.SET, tag + ":own", "1"));
        onLoop(() -> loopLocal.send(Command.SET, tag + ":res", "old"));
        // GIVEN the tag's slot half moved to another master: one key of the script on each side
        RedisCluster.SlotMove move = redis.beginSlotMove(tag, tag + ":res");
        String direct = redis.command(move.from(), "EVAL", script, "2", tag + ":res", tag + ":own", "answer");
        long tryAgainsBefore = redis.errorsAnswered(move.from(), "TRYAGAIN");

        // WHEN the script is sent while the slot moves, and the move ends after it was answered TRYAGAIN
        CompletableFuture<Response> ran = new CompletableFuture<>();
        loop.runOnContext(v -> loopLocal.send(Command.EVAL, script, "2", tag + ":res", tag + ":own", "answer")
                .subscribe().with(ran::complete, ran::completeExceptionally));
        Await.until("the slot's old master to answer the script TRYAGAIN", CALL_BOUND,
                () -> redis.errorsAnswered(move.from(), "TRYAGAIN") > tryAgainsBefore || ran.isDone());
        redis.finishSlotMove(move);

        // THEN it runs, once, on the slot's new master
        assertAll(() -> assertTrue(direct.startsWith("TRYAGAIN"), "the old master, asked directly: " + direct),
                () -> assertEquals(1, ran.get(CALL_BOUND.toMillis(), TimeUnit.MILLISECONDS).toInteger()),
                () -> assertEquals("answer", redis.get(move.to(), tag + ":res")),
                () -> assertEquals("", redis.get(move.to(), tag + ":own")));
    }

    @Test
    void connectionsToAMasterReplacedByItsReplica_areClosed_onceTheSlotTableNoLongerNamesIt() throws Exception {
        loopLocal.close(); // so that the router below is the only client of the cluster
        Map<Integer, String> keyOfMaster = keysOnEachMaster();
        int leaving = redis.masterWithReplica();
        int seed = keyOfMaster.keySet().stream().filter(port -> port != leaving).findFirst().orElseThrow();
        // GIVEN a router that knows the leaving master from the slot table only, and has used it
        LoopLocalRedis router = new LoopLocalRedis(vertx, null, "redis://127.0.0.1:" + seed, "cluster",
                Duration.ofSeconds(1), CALL_BOUND, 4, 64);
        try {
            readSlots(router);
            String key = keyOfMaster.get(leaving);
            onLoop(() -> router.send(Command.SET, key, "v"));
            long connectedBefore = redis.clientConnections(leaving);

            // WHEN its replica takes its place, and the router reads the slot table
            redis.failOver(leaving);
            readSlots(router);

            // THEN the router holds no connection to it, and serves its keys through the new master
            long connectedAfter = Await.upTo(CALL_BOUND, () -> redis.clientConnections(leaving), count -> count == 0);
            assertAll(() -> assertTrue(connectedBefore > 0, "connected to the master before"),
                    () -> assertEquals(0, connectedAfter, "connections to the former master"),
                    () -> assertEquals("v", onLoop(() -> router.send(Command.GET, key)).toString()));
        } finally {
            router.close();
        }
    }

    /** The key's value read through {@code router} on the test's loop: empty for none, null when the read failed. */
    private Optional<String> read(LoopLocalRedis router, String key) {
        try {
            Response value = onLoop(() -> router.send(Command.GET, key));
            return Optional.ofNullable(value).map(Response::toString);
        } catch (Exception notAnswered) {
            return null;
        }
    }

    private static Throwable failureOf(CompletableFuture<?> call) throws Exception {
        try {
            call.get(CALL_BOUND.toMillis(), TimeUnit.MILLISECONDS);
            return null;
        } catch (ExecutionException failed) {
            return failed.getCause();
        }
    }

    /** A key on each master, by the master's port. */
    private static Map<Integer, String> keysOnEachMaster() {
        Map<Integer, String> keys = new LinkedHashMap<>();
        for (int i = 0; i < 64 && keys.size() < 3; i++) {
            String key = "{" + UUID.randomUUID() + "}:k";
            keys.putIfAbsent(redis.masterOf(key), key);
        }
        return keys;
    }

    private Throwable failureOf(Supplier<Uni<Response>> call) throws Exception {
        try {
            onLoop(call);
            return null;
        } catch (ExecutionException failed) {
            return failed.getCause();
        }
    }

    /** Runs the call on the test's event loop and waits for its answer; a failed call throws its failure, wrapped. */
    private <T> T onLoop(Supplier<Uni<T>> call) throws Exception {
        CompletableFuture<T> answer = new CompletableFuture<>();
        loop.runOnContext(v -> call.get().subscribe().with(answer::complete, answer::completeExceptionally));
        return answer.get(CALL_BOUND.toMillis(), TimeUnit.MILLISECONDS);
    }
}
