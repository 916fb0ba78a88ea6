package io.payonce.redis;

import java.util.Set;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import io.payonce.PayOnceConfig;
import io.quarkus.runtime.ShutdownDelayInitiatedEvent;
import io.vertx.mutiny.redis.client.Command;
import io.vertx.mutiny.redis.client.RedisConnection;
import io.vertx.mutiny.redis.client.Request;
import io.vertx.mutiny.redis.client.Response;
import org.jboss.logging.Logger;

/**
 * Wake-ups of a token's local waiters: one Redis subscription per instance ({@code PSUBSCRIBE po:*:done})
 * delivers what an owner on any instance publishes, and an owner on this instance wakes them directly; on
 * a Redis Cluster the subscription is held by any one node, as every node hears every PUBLISH. Waiters
 * register before they look at the stored result, so a wake-up published in between is never lost. Without
 * the subscription waiters poll.
 */
@ApplicationScoped
public class WakeUps {

    private static final Logger LOG = Logger.getLogger(WakeUps.class);
    /** The payload of a notice that carries no answer, only "look again". */
    static final String LOOK_AGAIN = "-";

    private final LoopLocalRedis redis;
    private final boolean enabled;
    private final ConcurrentHashMap<String, Set<CompletableFuture<Optional<String>>>> waiters = new ConcurrentHashMap<>();
    private final AtomicBoolean connecting = new AtomicBoolean();
    private volatile RedisConnection connection;
    private volatile boolean listening;
    private volatile boolean draining;

    WakeUps(LoopLocalRedis redis, PayOnceConfig config) {
        this.redis = redis;
        this.enabled = config.redis().enabled();
    }

    /** True while the subscription is up, so a wake-up will come and polling can be slow. */
    public boolean listening() {
        return listening;
    }

    /**
     * True once this instance began shutting down: waiters stop waiting and are told to retry (the
     * gateway sends the retry to another instance), while owners finish within the shutdown timeout.
     */
    public boolean draining() {
        return draining;
    }

    void onShutdown(@Observes ShutdownDelayInitiatedEvent event) {
        draining = true;
        waiters.values().forEach(set -> set.forEach(w -> w.complete(Optional.empty())));
    }

    /**
     * A future completed by the next notice for the token: the payload published with it, or empty for
     * "look again". Unregister it when done.
     */
    public CompletableFuture<Optional<String>> register(String merchantId, String token) {
        CompletableFuture<Optional<String>> wake = new CompletableFuture<>();
        waiters.computeIfAbsent(RedisKeys.of(merchantId, token).channel(), k -> ConcurrentHashMap.newKeySet())
                .add(wake);
        return wake;
    }

    public void unregister(String merchantId, String token, CompletableFuture<Optional<String>> wake) {
        waiters.computeIfPresent(RedisKeys.of(merchantId, token).channel(), (k, set) -> {
            set.remove(wake);
            return set.isEmpty() ? null : set;
        });
    }

    /** Wakes this instance's waiters of the token, as a notice published through Redis would. */
    public void wakeLocal(String merchantId, String token, Optional<String> payload) {
        wake(RedisKeys.of(merchantId, token).channel(), payload);
    }

    /** Called by the health probe: subscribe when Redis is up and we are not; drop a silent one when down. */
    void ensure(boolean redisUp) {
        if (!enabled) {
            return;
        }
        if (!redisUp) {
            drop();
        } else if (!listening && connecting.compareAndSet(false, true)) {
            subscribe();
        }
    }

    private void subscribe() {
        redis.subscriber()
                .flatMap(conn -> {
                    connection = conn;
                    conn.handler(this::onMessage);
                    conn.exceptionHandler(e -> drop());
                    conn.endHandler(this::drop);
                    return conn.send(Request.cmd(Command.PSUBSCRIBE).arg(RedisKeys.DONE_PATTERN));
                })
                .subscribe().with(ok -> {
                    listening = true;
                    connecting.set(false);
                    LOG.info("subscribed to duplicate wake-ups");
                    // anything published while we were not listening is found by the waiters' next look
                    waiters.values().forEach(set -> set.forEach(w -> w.complete(Optional.empty())));
                }, failure -> {
                    connecting.set(false);
                    drop();
                });
    }

    private void drop() {
        listening = false;
        RedisConnection conn = connection;
        connection = null;
        if (conn != null) {
            conn.close().subscribe().with(v -> {
            }, e -> {
            });
        }
    }

    private void onMessage(Response message) {
        // ["pmessage", pattern, channel, payload]
        if (message == null || message.size() < 4 || !"pmessage".equalsIgnoreCase(message.get(0).toString())) {
            return;
        }
        String payload = message.get(3).toString();
        wake(message.get(2).toString(), LOOK_AGAIN.equals(payload) ? Optional.empty() : Optional.of(payload));
    }

    private void wake(String channel, Optional<String> payload) {
        Set<CompletableFuture<Optional<String>>> set = waiters.get(channel);
        if (set != null) {
            set.forEach(w -> w.complete(payload));
        }
    }

}
