package io.payonce.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A RabbitMQ node of the tests' own, for tests that stop or restart a broker, which they must never do to
 * the shared one: node {@code payonce-test-<random>@localhost}, a {@link RabbitNode} (its AMQP listener on a
 * free loopback port, its distribution port of its own, its data and configuration, its logs under
 * {@code target/it-logs}) whose directory and home, with a random Erlang cookie no other node has, are under
 * a temporary directory ({@code payonce-rabbit-*} in the system's). It is run as the tests' user (root);
 * its {@code rabbitmqctl} runs with that same home, so it can reach this node and no other, and nothing
 * here is ever aimed at {@code rabbit@localhost}. Guest may connect, from loopback only.
 *
 * <p>A start takes about five seconds here (the Erlang VM boots, then RabbitMQ's boot steps), so the few
 * test classes that need a node share one per JVM through {@link #shared}, which a shutdown hook stops;
 * each class makes its own {@link #vhost}. A JVM killed before its hooks run leaves the node running:
 * {@code ps aux | grep payonce-test-} finds it, and its cookie is in its directory's {@code home}.
 */
public final class PrivateRabbit implements AutoCloseable {

    public static final String HOST = RabbitNode.HOST;
    /** A start takes about five seconds here; a machine busy with other builds may make that many more. */
    public static final Duration START_BOUND = RabbitNode.START_BOUND;

    private static PrivateRabbit shared;

    private final RabbitNode node;
    private final Path dir;

    private PrivateRabbit(RabbitNode node, Path dir) {
        this.node = node;
        this.dir = dir;
    }

    /**
     * The node this JVM's tests share, started on the first call and stopped when the JVM exits; running,
     * its application started, whatever the class before left it in.
     */
    public static synchronized PrivateRabbit shared() throws IOException {
        if (shared == null) {
            PrivateRabbit started = start();
            Runtime.getRuntime().addShutdownHook(new Thread(started::close, "private-rabbit-stop"));
            shared = started;
        } else if (!shared.node.running()) {
            shared.node.start();
        } else if (!shared.node.appRunning()) {
            shared.node.startApp();
        }
        return shared;
    }

    /** A node of the caller's own, started and ready; the caller closes it. */
    public static PrivateRabbit start() throws IOException {
        Path dir = Files.createTempDirectory("payonce-rabbit-");
        try {
            RabbitNode node = RabbitNode.configure("payonce-test-" + RabbitVhost.random(8) + "@localhost", dir,
                    RabbitNode.home(dir), "");
            PrivateRabbit rabbit = new PrivateRabbit(node, dir);
            try {
                node.start();
            } catch (RuntimeException | Error e) {
                rabbit.close();
                throw e;
            }
            return rabbit;
        } catch (IOException | RuntimeException | Error e) {
            RabbitNode.deleteTree(dir);
            throw e;
        }
    }

    public String host() {
        return HOST;
    }

    /** The AMQP port: the same across {@link #stopApp}, {@link #restart} and their counterparts. */
    public int port() {
        return node.port();
    }

    /** The Erlang node name, {@code payonce-test-<random>@localhost}. */
    public String node() {
        return node.name();
    }

    /** How long the last start of the node took, from spawning it to {@code await_startup} answering. */
    public Duration lastStart() {
        return node.lastStart();
    }

    /** A fresh vhost for {@code testClass} on this node, guest and users it makes given every permission. */
    public RabbitVhost vhost(Class<?> testClass) {
        return RabbitVhost.on(node.ctl(), HOST, node.port(), testClass);
    }

    /** The environment an application process needs to reach this node's default vhost as guest. */
    public Map<String, String> appEnv() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("RABBITMQ_HOST", HOST);
        env.put("RABBITMQ_PORT", String.valueOf(node.port()));
        env.put("RABBITMQ_USERNAME", RabbitVhost.Credentials.GUEST.username());
        env.put("RABBITMQ_PASSWORD", RabbitVhost.Credentials.GUEST.password());
        env.put("RABBITMQ_VIRTUAL_HOST", "/");
        return env;
    }

    /** Runs {@code rabbitmqctl} on this node (e.g. {@code list_queues}), bounded; fails unless it exited 0. */
    public String ctl(String... args) {
        return node.ctl().run(args);
    }

    /**
     * Stops the RabbitMQ application, the Erlang VM left running: the listener closes and every connection
     * is closed by the broker; durable queues and their messages stay on disk.
     */
    public void stopApp() {
        node.stopApp();
    }

    /** Starts the application {@link #stopApp} stopped, and returns once it listens again. */
    public void startApp() {
        node.startApp();
    }

    /**
     * Stops the node entirely (the VM halts) and starts it again on the same data directory and port:
     * durable quorum queues and their persistent messages survive it.
     */
    public void restart() {
        node.stop();
        node.start();
    }

    /**
     * SIGKILL of the node's Erlang VM, as a crash would end it: connections reset, nothing flushed or closed
     * politely. {@link #startAgain()} starts the node again on the same data directory and port.
     */
    public void kill9() {
        node.kill9();
    }

    /** Starts a node that is down ({@link #kill9()}, or died) again, and returns once it is ready; nothing if it runs. */
    public void startAgain() {
        if (!node.running()) {
            node.start();
        } else if (!node.appRunning()) {
            node.startApp();
        }
    }

    /** Stops the node, and deletes its data and configuration; its logs stay in {@link ServerLogs#DIR}. */
    @Override
    public void close() {
        try {
            node.stop();
        } finally {
            RabbitNode.deleteTree(dir);
            synchronized (PrivateRabbit.class) {
                if (shared == this) {
                    shared = null;
                }
            }
        }
    }
}
