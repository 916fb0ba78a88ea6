package io.payonce.redis;

import static io.payonce.support.Fixtures.id;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import jakarta.inject.Inject;

import io.netty.channel.EventLoop;
import io.quarkus.redis.datasource.RedisDataSource;
import io.quarkus.test.junit.QuarkusTest;
import io.vertx.core.Vertx;
import io.vertx.core.impl.ContextInternal;
import io.vertx.core.impl.VertxInternal;
import io.vertx.mutiny.redis.client.Command;
import io.vertx.mutiny.redis.client.Redis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Each event loop gets its own client, which reads the real Redis and answers on the calling loop. */
@QuarkusTest
class LoopLocalRedisTest {

    @Inject
    LoopLocalRedis loopLocal;

    @Inject
    Vertx vertx;

    @Inject
    RedisDataSource redis;

    private final String key = "po:test:looplocal:" + id("k");

    @AfterEach
    void removeKey() {
        redis.key().del(key);
    }

    @Test
    void offAnEventLoop_thereIsNone_andCommandsGoThroughTheQuarkusClient() {
        assertNull(loopLocal.current(), "a test thread is no event loop");
        redis.value(String.class).set(key, "shared");
        assertEquals("shared", loopLocal.send(Command.GET, key).await().atMost(Duration.ofSeconds(5)).toString());
    }

    @Test
    void setNx_answersOkWhenItSets_andNilWhenTheKeyIsTaken() throws Exception {
        ContextInternal loop = twoEventLoops().get(0);
        CompletableFuture<List<String>> answers = new CompletableFuture<>();
        loop.runOnContext(v -> loopLocal.send(Command.SET, key, "1", "NX", "PX", "10000")
                .flatMap(first -> loopLocal.send(Command.SET, key, "1", "NX", "PX", "10000")
                        .map(second -> Arrays.asList(first == null ? null : first.toString(),
                                second == null ? null : second.toString())))
                .subscribe().with(answers::complete, answers::completeExceptionally));
        assertEquals(Arrays.asList("OK", null), answers.get(10, TimeUnit.SECONDS));
        long pttl = redis.key().pttl(key);
        assertTrue(pttl > 0 && pttl <= 10_000, "set with its expiry, was " + pttl);
    }

    @Test
    void eachEventLoop_hasItsOwnClient_whichReadsRedis_andAnswersOnThatLoop() throws Exception {
        redis.value(String.class).set(key, "cached");
        List<ContextInternal> loops = twoEventLoops();
        List<Seen> seen = new ArrayList<>();
        for (ContextInternal loop : loops) {
            seen.add(readOn(loop));
        }

        for (Seen s : seen) {
            assertNotNull(s.client(), "a client on an event loop");
            assertSame(s.client(), s.again(), "the same client on the same loop");
            assertEquals("cached", s.value(), "read from Redis");
            assertEquals(s.loopThread(), s.answeredOn(), "answered on the calling loop");
        }
        assertNotEquals(seen.get(0).client(), seen.get(1).client(), "another loop, another client");
    }

    private record Seen(Redis client, Redis again, String value, Thread loopThread, Thread answeredOn) {
    }

    private Seen readOn(ContextInternal loop) throws Exception {
        CompletableFuture<Seen> seen = new CompletableFuture<>();
        loop.runOnContext(v -> {
            Redis client = loopLocal.current();
            Redis again = loopLocal.current();
            Thread loopThread = Thread.currentThread();
            loopLocal.send(Command.GET, key).subscribe().with(
                    r -> seen.complete(new Seen(client, again, r == null ? null : r.toString(), loopThread,
                            Thread.currentThread())),
                    seen::completeExceptionally);
        });
        return seen.get(10, TimeUnit.SECONDS);
    }

    /** Contexts on two different event loops (new contexts take the loops in turn). */
    private List<ContextInternal> twoEventLoops() {
        VertxInternal internal = (VertxInternal) vertx;
        ContextInternal first = internal.createEventLoopContext();
        EventLoop firstLoop = first.nettyEventLoop();
        for (int i = 0; i < 64; i++) {
            ContextInternal next = internal.createEventLoopContext();
            if (next.nettyEventLoop() != firstLoop) {
                return List.of(first, next);
            }
        }
        throw new AssertionError("one event loop only: configure at least two");
    }
}
