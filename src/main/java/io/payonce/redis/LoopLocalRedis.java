package io.payonce.redis;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import jakarta.annotation.PreDestroy;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import io.netty.channel.EventLoop;
import io.payonce.PayOnceConfig;
import io.quarkus.redis.datasource.ReactiveRedisDataSource;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.vertx.UniHelper;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.impl.ContextInternal;
import io.vertx.core.impl.VertxInternal;
import io.vertx.mutiny.redis.client.Command;
import io.vertx.mutiny.redis.client.Redis;
import io.vertx.mutiny.redis.client.RedisConnection;
import io.vertx.mutiny.redis.client.Request;
import io.vertx.mutiny.redis.client.Response;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.impl.types.ErrorType;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * A Redis client per event loop and Redis node, whose pooled connections live on that loop: a call made
 * on it is written, answered and continued on the calling thread. The client Quarkus configures opens
 * all its connections on the one event loop it was created on, so a call from any other loop crosses
 * threads twice (the write is handed to the connection's loop, the answer handed back), a task queue and
 * a wake-up each way. Used for every Redis call of the fast path.
 * <p>
 * On a Redis Cluster ({@code quarkus.redis.client-type=cluster}) a command goes to the master that
 * {@link ClusterSlots} says serves its key, over a plain connection to that node. The Quarkus cluster
 * client instead takes a connection to every node of the cluster for each command, so it fails every
 * command, whatever its key, while one node is unreachable; here a dead master fails only the commands
 * for its own slots until its replica takes over, and a node the slot table stops naming has its clients
 * closed. While a slot moves between masters, a command on several keys of it may be answered
 * {@code TRYAGAIN} (its keys are on both sides); it is sent again, routed afresh, after a short pause, as
 * often as its bound allows.
 * <p>
 * A call is written to no node once its bound has passed, the bound its caller gives up after: a call that
 * waited for a connection to a hung node is dropped, failed, when the node answers again, rather than
 * written long after its caller went on without it (a stale {@code SET NX} or {@code DEL} would then undo
 * what happened since). What was written before its bound a node may still execute whenever it resumes.
 */
@Singleton
class LoopLocalRedis {

    /** After TRYAGAIN the first pause: a slot's keys move in milliseconds each. */
    private static final long FIRST_RETRY_PAUSE_MS = 5;
    /** The pauses double up to this, short beside any bound, so a move that ends is seen soon after. */
    private static final long MAX_RETRY_PAUSE_MS = 50;

    private final Vertx vertx;
    private final ReactiveRedisDataSource shared;
    /** The standalone Redis every loop's client connects to; null on a cluster or several hosts. */
    private final String standalone;
    /** The cluster's slot table; null unless the client type is cluster. */
    private final ClusterSlots cluster;
    /** How long reading the slot table, or connecting to one node, may take. */
    private final Duration nodeTimeout;
    /** The bound of a command, the one its caller puts on it: past it, the command is written to no node. */
    private final Duration callTimeout;
    private final int poolSize;
    private final int poolWaiting;
    private final ConcurrentHashMap<EventLoop, ConcurrentHashMap<String, Redis>> clients = new ConcurrentHashMap<>();
    /** Each event loop's number, in the order they first sent a command: part of their pools' names. */
    private final ConcurrentHashMap<EventLoop, Integer> loopNumbers = new ConcurrentHashMap<>();
    private final AtomicInteger nextLoopNumber = new AtomicInteger();

    @Inject
    LoopLocalRedis(Vertx vertx, ReactiveRedisDataSource shared, PayOnceConfig config,
            @ConfigProperty(name = "quarkus.redis.hosts") Optional<String> hosts,
            @ConfigProperty(name = "quarkus.redis.client-type") Optional<String> clientType,
            @ConfigProperty(name = "quarkus.redis.max-pool-size", defaultValue = "6") int poolSize,
            @ConfigProperty(name = "quarkus.redis.max-pool-waiting", defaultValue = "24") int poolWaiting,
            @ConfigProperty(name = "quarkus.vertx.event-loops-pool-size") Optional<Integer> loops) {
        this(vertx, shared, hosts.orElse(null), clientType.orElse("standalone"), config.redis().probeTimeout(),
                config.redis().timeout(),
                // the configured pool, shared out between the loops
                Math.max(2, poolSize / Math.max(1, loops.orElse(2 * Runtime.getRuntime().availableProcessors()))),
                poolWaiting);
    }

    LoopLocalRedis(Vertx vertx, ReactiveRedisDataSource shared, String hosts, String clientType, Duration nodeTimeout,
            Duration callTimeout, int poolSize, int poolWaiting) {
        this.vertx = vertx;
        this.shared = shared;
        boolean isCluster = "cluster".equalsIgnoreCase(clientType);
        boolean isStandalone = "standalone".equalsIgnoreCase(clientType);
        this.standalone = isStandalone && hosts != null && !hosts.contains(",") ? hosts : null;
        this.cluster = isCluster && hosts != null ? new ClusterSlots(hosts) : null;
        this.nodeTimeout = nodeTimeout;
        this.callTimeout = callTimeout;
        this.poolSize = poolSize;
        this.poolWaiting = poolWaiting;
    }

    /**
     * Sends the command on the calling event loop's client of the node that holds its key. Off an event
     * loop it goes through the Quarkus client, or on a cluster through an event loop's clients all the same;
     * before a cluster's slots are known, through the Quarkus client.
     */
    Uni<Response> send(Command command, String... args) {
        Call call = new Call(command, args, callTimeout);
        ContextInternal loop = currentLoop();
        if (loop != null) {
            return sendOn(loop, call);
        }
        return cluster == null ? sendVia(shared.getRedis(), call, false) : onLoop(other -> sendOn(other, call));
    }

    /** A command on its way, and the instant ({@link System#nanoTime()}) from which it is written to no node. */
    private record Call(Command command, String[] args, Request request, long deadline) {

        Call(Command command, String[] args, Duration bound) {
            this(command, args, request(command, args), System.nanoTime() + bound.toNanos());
        }

        private static Request request(Command command, String[] args) {
            Request request = Request.cmd(command);
            for (String arg : args) {
                request.arg(arg);
            }
            return request;
        }

        boolean expired() {
            return System.nanoTime() - deadline >= 0;
        }
    }

    private Uni<Response> sendOn(ContextInternal loop, Call call) {
        return sendOn(loop, call, 0);
    }

    private Uni<Response> sendOn(ContextInternal loop, Call call, int retries) {
        String node = nodeFor(loop, call.command(), call.args());
        if (node == null) {
            return sendVia(shared.getRedis(), call, false);
        }
        Uni<Response> sent = sendVia(clientOn(loop, node), call, false);
        return cluster == null ? sent : sent.onFailure().recoverWithUni(failure -> redirect(loop, node, call, failure))
                .onFailure(LoopLocalRedis::isTryAgain).recoverWithUni(failure -> tryAgain(loop, call, retries, failure));
    }

    private static boolean isTryAgain(Throwable failure) {
        return failure instanceof ErrorType error && error.is("TRYAGAIN");
    }

    /** Sends the call again after a pause, routed afresh, unless its bound would pass first: then it fails as it is. */
    private Uni<Response> tryAgain(ContextInternal loop, Call call, int retries, Throwable tryAgain) {
        long pauseMs = Math.min(MAX_RETRY_PAUSE_MS, FIRST_RETRY_PAUSE_MS << Math.min(retries, 10));
        if (call.deadline() - System.nanoTime() <= TimeUnit.MILLISECONDS.toNanos(pauseMs)) {
            return Uni.createFrom().failure(tryAgain);
        }
        return Uni.createFrom().<Void>emitter(paused -> loop.setTimer(pauseMs, timer -> paused.complete(null)))
                .flatMap(paused -> sendOn(loop, call, retries + 1));
    }

    /**
     * Writes the call on a connection of the client's pool ({@code ASKING} first when {@code asking}), unless
     * its bound passed while it waited for one. The connection goes back to the pool whatever becomes of the
     * call, even if its caller has given up on it.
     */
    private static Uni<Response> sendVia(Redis client, Call call, boolean asking) {
        return Uni.createFrom().deferred(() -> UniHelper.toUni(client.getDelegate().connect().compose(connection -> {
            if (call.expired()) {
                connection.close();
                return Future.failedFuture(new TimeoutException(
                        call.command() + " not sent: its bound passed while it waited for a connection"));
            }
            Future<io.vertx.redis.client.Response> sent = asking
                    ? connection.batch(List.of(Request.cmd(Command.ASKING).getDelegate(), call.request().getDelegate()))
                            .map(replies -> replies.get(1))
                    : connection.send(call.request().getDelegate());
            return sent.andThen(done -> connection.close());
        }))).map(Response::newInstance);
    }

    /**
     * The health probe: a PING, or on a cluster the slot table read afresh from the first node that
     * answers, so one dead node does not make the whole cluster look down. Fails when Redis does not answer.
     */
    Uni<Void> probe() {
        if (cluster == null) {
            return shared.execute("PING").replaceWithVoid();
        }
        return onLoop(this::readSlots).flatMap(read -> read
                ? Uni.createFrom().voidItem()
                : Uni.createFrom().failure(new IllegalStateException("no node of the Redis Cluster answered")));
    }

    /**
     * A connection of its own for a subscription: from the Quarkus client, or on a cluster to the first
     * node that answers (every node of a cluster hears every PUBLISH).
     */
    Uni<RedisConnection> subscriber() {
        if (cluster == null) {
            return shared.getRedis().connect();
        }
        return onLoop(loop -> connectToAny(loop, cluster.nodes(), 0));
    }

    /** The standalone client of the calling event loop, created on first use; null off an event loop or on a cluster. */
    Redis current() {
        ContextInternal loop = currentLoop();
        return loop == null || standalone == null ? null : clientOn(loop, standalone);
    }

    private String nodeFor(ContextInternal loop, Command command, String[] args) {
        if (cluster == null) {
            return standalone;
        }
        String master = args.length == 0 ? null : cluster.masterOf(routingKey(command, args));
        if (master == null) {
            readSlotsSoon(loop);
        }
        return master;
    }

    /** The key a command is routed by: a script's first key, otherwise the first argument (a key or a channel). */
    static String routingKey(Command command, String... args) {
        boolean script = command.equals(Command.EVAL) || command.equals(Command.EVALSHA);
        return script ? args[2] : args[0];
    }

    /**
     * A cluster's answer to a command sent by an out-of-date table: {@code MOVED} (the slot has another
     * master) is followed once, and the table read again; {@code ASK} (the slot is being migrated) once,
     * as the protocol asks. Any other failure (a node gone, the cluster between masters) has the table
     * read again and stays a failure: {@code TRYAGAIN}, whether from the node or the one redirected to, for
     * {@link #tryAgain}; any other for the caller's fallback.
     */
    private Uni<Response> redirect(ContextInternal loop, String node, Call call, Throwable failure) {
        if (failure instanceof ErrorType error && (error.is("MOVED") || error.is("ASK"))) {
            String target = cluster.redirectedTo(error.getMessage(), node);
            if (target != null && error.is("MOVED")) {
                readSlotsSoon(loop);
            }
            if (target != null) {
                return sendVia(clientOn(loop, target), call, error.is("ASK"));
            }
        }
        if (!(failure instanceof ErrorType error) || error.is("CLUSTERDOWN") || error.is("TRYAGAIN")) {
            readSlotsSoon(loop);
        }
        return Uni.createFrom().failure(failure);
    }

    /** Reads the slot table in the background, unless a read is under way or has just been made. */
    private void readSlotsSoon(ContextInternal loop) {
        if (cluster.claimRead()) {
            readSlots(loop).subscribe().with(read -> cluster.readDone(), failed -> cluster.readDone());
        }
    }

    /**
     * Asks every node for CLUSTER SLOTS at once and takes the first answer: a dead node refuses at once,
     * but a hung one would hold up a read that asked the nodes in turn. True once one answered, and then the
     * clients of the nodes the table no longer names are closed.
     */
    private Uni<Boolean> readSlots(ContextInternal loop) {
        List<Uni<Boolean>> reads = cluster.nodes().stream().map(node -> sendVia(clientOn(loop, node),
                        new Call(Command.CLUSTER, new String[] {"SLOTS"}, nodeTimeout), false)
                .flatMap(reply -> cluster.read(node, reply) ? Uni.createFrom().item(true)
                        : Uni.createFrom().<Boolean>failure(new IllegalStateException(node + " serves no slots"))))
                .toList();
        return Uni.join().first(reads).withItem()
                .invoke(this::closeDeparted)
                .ifNoItem().after(nodeTimeout).fail()
                .onFailure().recoverWithItem(false);
    }

    /**
     * Closes every loop's client of a node that is neither a master in the slot table nor a configured node
     * (a master its replica replaced, a node removed from the cluster): its pooled connections would otherwise
     * stay open, and its client stay in the map, for as long as the process runs. A call or subscription
     * under way on such a client fails, as it would on that node; a later redirection to the node makes a
     * client anew.
     */
    private void closeDeparted() {
        List<String> named = cluster.nodes();
        for (ConcurrentHashMap<String, Redis> ofLoop : clients.values()) {
            for (String node : ofLoop.keySet()) {
                Redis departed = named.contains(node) ? null : ofLoop.remove(node);
                if (departed != null) {
                    departed.close();
                }
            }
        }
    }

    private Uni<RedisConnection> connectToAny(ContextInternal loop, List<String> nodes, int index) {
        String node = nodes.get(index);
        Uni<RedisConnection> connected = clientOn(loop, node).connect().ifNoItem().after(nodeTimeout).fail();
        return index + 1 == nodes.size() ? connected
                : connected.onFailure().recoverWithUni(failure -> connectToAny(loop, nodes, index + 1));
    }

    /** The calling event loop's context, or null off an event loop. */
    private static ContextInternal currentLoop() {
        Context context = Vertx.currentContext();
        if (!(context instanceof ContextInternal internal) || !context.isEventLoopContext() || !internal.inThread()) {
            return null;
        }
        return internal;
    }

    /** Runs the call on the calling event loop, or off one, on an event loop of its own. */
    private <T> Uni<T> onLoop(Function<ContextInternal, Uni<T>> call) {
        ContextInternal loop = currentLoop();
        if (loop != null) {
            return call.apply(loop);
        }
        ContextInternal other = ((VertxInternal) vertx).createEventLoopContext();
        return Uni.createFrom().emitter(emitter -> other.runOnContext(v -> call.apply(other).subscribe()
                .with(emitter::complete, emitter::fail)));
    }

    private Redis clientOn(ContextInternal loop, String node) {
        ConcurrentHashMap<String, Redis> ofLoop = clients.computeIfAbsent(loop.nettyEventLoop(),
                l -> new ConcurrentHashMap<>());
        Redis client = ofLoop.get(node);
        return client != null ? client
                : ofLoop.computeIfAbsent(node, n -> createOn(loop.unwrap(), n,
                        poolName(loopNumbers.computeIfAbsent(loop.nettyEventLoop(), l -> nextLoopNumber.getAndIncrement()), n)));
    }

    /**
     * The name the client's pool and connections have in the Redis metrics ({@code pool_name}, {@code clientName}):
     * its loop's number and its node, the same at every start; without one Vert.x names a pool with a random
     * UUID and its client metrics with an empty prefix.
     */
    static String poolName(int loopNumber, String node) {
        String where;
        try {
            URI uri = URI.create(node);
            where = uri.getHost() == null ? uri.getScheme() : uri.getHost() + ":" + (uri.getPort() < 0 ? 6379 : uri.getPort());
        } catch (IllegalArgumentException notAUri) {
            where = "node";
        }
        return "fast-path-" + loopNumber + "@" + where;
    }

    /** A client takes the context current when it is made as the home of its connections. */
    private Redis createOn(ContextInternal loopContext, String node, String name) {
        RedisOptions options = new RedisOptions().setConnectionString(node)
                .setMaxPoolSize(poolSize).setMaxPoolWaiting(poolWaiting).setPoolName(name);
        // "redis|name": Quarkus' metrics read the prefix and the client's name from it, as for its own client
        options.getNetClientOptions().setMetricsName("redis|" + name);
        Redis[] created = new Redis[1];
        loopContext.dispatch(() -> created[0] = Redis.createClient(io.vertx.mutiny.core.Vertx.newInstance(vertx), options));
        return created[0];
    }

    @PreDestroy
    void close() {
        clients.values().forEach(ofLoop -> ofLoop.values().forEach(Redis::close));
        clients.clear();
    }
}
