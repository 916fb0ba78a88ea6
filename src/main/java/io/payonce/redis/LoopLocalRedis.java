package io.payonce.redis;

import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;

import io.netty.channel.EventLoop;
import io.quarkus.redis.datasource.ReactiveRedisDataSource;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.impl.ContextInternal;
import io.vertx.mutiny.redis.client.Command;
import io.vertx.mutiny.redis.client.Redis;
import io.vertx.mutiny.redis.client.Request;
import io.vertx.mutiny.redis.client.Response;
import io.vertx.redis.client.RedisOptions;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * A Redis client per event loop, whose pooled connections live on that loop: a call made on it is
 * written, answered and continued on the calling thread. The client Quarkus configures opens all its
 * connections on the one event loop it was created on, so a call from any other loop crosses threads
 * twice (the write is handed to the connection's loop, the answer handed back), a task queue and a
 * wake-up each way. Used for the Redis calls every request makes (the cached-answer lookup, the
 * ownership key, the owner's hand-over); standalone Redis only (the {@code quarkus.redis.hosts} URL),
 * otherwise, and off an event loop, {@link #send} goes through the Quarkus client.
 */
@Singleton
class LoopLocalRedis {

    private final Vertx vertx;
    private final ReactiveRedisDataSource shared;
    private final String connectionString;
    private final int poolSize;
    private final int poolWaiting;
    private final ConcurrentHashMap<EventLoop, Redis> clients = new ConcurrentHashMap<>();

    LoopLocalRedis(Vertx vertx, ReactiveRedisDataSource shared, @ConfigProperty(name = "quarkus.redis.hosts") Optional<String> hosts,
            @ConfigProperty(name = "quarkus.redis.client-type") Optional<String> clientType,
            @ConfigProperty(name = "quarkus.redis.max-pool-size", defaultValue = "6") int poolSize,
            @ConfigProperty(name = "quarkus.redis.max-pool-waiting", defaultValue = "24") int poolWaiting,
            @ConfigProperty(name = "quarkus.vertx.event-loops-pool-size") Optional<Integer> loops) {
        this.vertx = vertx;
        this.shared = shared;
        boolean standalone = clientType.map("standalone"::equalsIgnoreCase).orElse(true);
        this.connectionString = standalone && hosts.isPresent() && !hosts.get().contains(",") ? hosts.get() : null;
        // the configured pool, shared out between the loops
        int loopCount = loops.orElse(2 * Runtime.getRuntime().availableProcessors());
        this.poolSize = Math.max(2, poolSize / Math.max(1, loopCount));
        this.poolWaiting = poolWaiting;
    }

    /** Sends the command on the calling event loop's client, or on the Quarkus client when there is none. */
    Uni<Response> send(Command command, String... args) {
        Redis local = current();
        if (local == null) {
            return shared.execute(command, args);
        }
        Request request = Request.cmd(command);
        for (String arg : args) {
            request.arg(arg);
        }
        return local.send(request);
    }

    /** The client of the calling event loop, created on first use; null off an event loop. */
    Redis current() {
        if (connectionString == null) {
            return null;
        }
        Context context = Vertx.currentContext();
        if (!(context instanceof ContextInternal internal) || !context.isEventLoopContext() || !internal.inThread()) {
            return null;
        }
        EventLoop loop = internal.nettyEventLoop();
        Redis client = clients.get(loop);
        return client != null ? client : clients.computeIfAbsent(loop, l -> createOn(internal.unwrap()));
    }

    /** A client takes the context current when it is made as the home of its connections. */
    private Redis createOn(ContextInternal loopContext) {
        RedisOptions options = new RedisOptions().setConnectionString(connectionString)
                .setMaxPoolSize(poolSize).setMaxPoolWaiting(poolWaiting);
        Redis[] created = new Redis[1];
        loopContext.dispatch(() -> created[0] = Redis.createClient(io.vertx.mutiny.core.Vertx.newInstance(vertx), options));
        return created[0];
    }

    @PreDestroy
    void close() {
        clients.values().forEach(Redis::close);
        clients.clear();
    }
}
