package io.payonce.support;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A RabbitMQ node of the tests' own, for tests that stop or restart a broker, which they must never do to
 * the shared one: node {@code payonce-test-<random>@localhost}, its AMQP listener on a free loopback port,
 * its distribution port of its own, its data, configuration and Erlang cookie under a temporary directory
 * ({@code payonce-rabbit-*} in the system's), its logs under {@code target/it-logs} ({@link ServerLogs}).
 * It is started as a child process in the foreground, run as the tests' user (root) with a home of its own
 * holding a random cookie; its {@code rabbitmqctl} runs with that same home, so it can reach this node and
 * no other (the shared node's cookie is another), and nothing here is ever aimed at {@code rabbit@localhost}.
 * The node reads nothing of the shared node's configuration: the environment file, configuration file and
 * enabled-plugins file are its own, and no plugin is enabled. Guest may connect, from loopback only.
 *
 * <p>A start takes about five seconds here (the Erlang VM boots, then RabbitMQ's boot steps), so the few
 * test classes that need a node share one per JVM through {@link #shared}, which a shutdown hook stops;
 * each class makes its own {@link #vhost}. A JVM killed before its hooks run leaves the node running:
 * {@code ps aux | grep payonce-test-} finds it, and its cookie is in its directory's {@code home}.
 */
public final class PrivateRabbit implements AutoCloseable {

    public static final String HOST = "127.0.0.1";
    /** A start takes about five seconds here; a machine busy with other builds may make that many more. */
    public static final Duration START_BOUND = Duration.ofSeconds(90);
    /** A stop closes the connections, flushes the queues and halts the VM: a second or two. */
    private static final Duration STOP_BOUND = Duration.ofSeconds(30);
    private static final String SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server";
    /** Each look at a starting node is a CLI run of under a second; the node has its whole START_BOUND. */
    private static final String LOOK_TIMEOUT_SECONDS = "10";

    private static PrivateRabbit shared;

    private final String node;
    private final int port;
    private final Path dir;
    private final File consoleLog;
    private final Map<String, String> environment;
    private final RabbitmqCtl ctl;
    private Process process;
    private boolean appRunning;
    private Duration lastStart;

    private PrivateRabbit(String node, int port, Path dir, File consoleLog, Map<String, String> environment) {
        this.node = node;
        this.port = port;
        this.dir = dir;
        this.consoleLog = consoleLog;
        this.environment = environment;
        this.ctl = RabbitmqCtl.privateNode(node, Map.of("HOME", environment.get("HOME"),
                "RABBITMQ_CONF_ENV_FILE", environment.get("RABBITMQ_CONF_ENV_FILE")));
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
        } else if (!shared.process.isAlive()) {
            shared.startNode();
        } else if (!shared.appRunning) {
            shared.startApp();
        }
        return shared;
    }

    /** A node of the caller's own, started and ready; the caller closes it. */
    public static PrivateRabbit start() throws IOException {
        String node = "payonce-test-" + RabbitVhost.random(8) + "@localhost";
        int port = LoopbackPorts.take();
        int distPort = LoopbackPorts.take();
        Path dir = Files.createTempDirectory("payonce-rabbit-");
        try {
            Path home = Files.createDirectory(dir.resolve("home"));
            Path cookie = home.resolve(".erlang.cookie");
            Files.writeString(cookie, RabbitVhost.random(32).toUpperCase(), StandardCharsets.US_ASCII);
            Files.setPosixFilePermissions(cookie, PosixFilePermissions.fromString("r--------"));
            Path config = Files.writeString(dir.resolve("rabbitmq.conf"),
                    "listeners.tcp.1 = " + HOST + ":" + port + "\n", StandardCharsets.US_ASCII);
            Path plugins = Files.writeString(dir.resolve("enabled_plugins"), "[].\n", StandardCharsets.US_ASCII);
            Path envFile = Files.writeString(dir.resolve("rabbitmq-env.conf"),
                    "# this node's own: /etc/rabbitmq/rabbitmq-env.conf names the shared node\n",
                    StandardCharsets.US_ASCII);
            File logs = new File(ServerLogs.DIR, node.substring(0, node.indexOf('@')));
            logs.mkdirs();

            Map<String, String> environment = new LinkedHashMap<>();
            environment.put("HOME", home.toString());
            environment.put("RABBITMQ_NODENAME", node);
            environment.put("RABBITMQ_NODE_IP_ADDRESS", HOST);
            environment.put("RABBITMQ_NODE_PORT", String.valueOf(port));
            environment.put("RABBITMQ_DIST_PORT", String.valueOf(distPort));
            environment.put("RABBITMQ_MNESIA_BASE", Files.createDirectory(dir.resolve("mnesia")).toString());
            environment.put("RABBITMQ_LOG_BASE", logs.getAbsolutePath());
            environment.put("RABBITMQ_CONFIG_FILE", config.toString());
            environment.put("RABBITMQ_ADVANCED_CONFIG_FILE", dir.resolve("advanced.config").toString());
            environment.put("RABBITMQ_ENABLED_PLUGINS_FILE", plugins.toString());
            environment.put("RABBITMQ_PID_FILE", dir.resolve("node.pid").toString());
            environment.put("RABBITMQ_CONF_ENV_FILE", envFile.toString());
            environment.put("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "-kernel inet_dist_use_interface {127,0,0,1}");

            PrivateRabbit rabbit = new PrivateRabbit(node, port, dir,
                    new File(logs, "console.log"), environment);
            ServerLogs.register(rabbit.consoleLog);
            ServerLogs.register(new File(logs, node + ".log"));
            try {
                rabbit.startNode();
            } catch (RuntimeException | Error e) {
                rabbit.close();
                throw e;
            }
            return rabbit;
        } catch (IOException | RuntimeException | Error e) {
            if (Files.exists(dir)) {
                deleteTree(dir);
            }
            throw e;
        }
    }

    public String host() {
        return HOST;
    }

    /** The AMQP port: the same across {@link #stopApp}, {@link #restart} and their counterparts. */
    public int port() {
        return port;
    }

    /** The Erlang node name, {@code payonce-test-<random>@localhost}. */
    public String node() {
        return node;
    }

    /** How long the last start of the node took, from spawning it to {@code await_startup} answering. */
    public synchronized Duration lastStart() {
        return lastStart;
    }

    /** A fresh vhost for {@code testClass} on this node, guest and users it makes given every permission. */
    public RabbitVhost vhost(Class<?> testClass) {
        return RabbitVhost.on(ctl, HOST, port, testClass);
    }

    /** The environment an application process needs to reach this node's default vhost as guest. */
    public Map<String, String> appEnv() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("RABBITMQ_HOST", HOST);
        env.put("RABBITMQ_PORT", String.valueOf(port));
        env.put("RABBITMQ_USERNAME", RabbitVhost.Credentials.GUEST.username());
        env.put("RABBITMQ_PASSWORD", RabbitVhost.Credentials.GUEST.password());
        env.put("RABBITMQ_VIRTUAL_HOST", "/");
        return env;
    }

    /** Runs {@code rabbitmqctl} on this node (e.g. {@code list_queues}), bounded; fails unless it exited 0. */
    public String ctl(String... args) {
        return ctl.run(args);
    }

    /**
     * Stops the RabbitMQ application, the Erlang VM left running: the listener closes and every connection
     * is closed by the broker; durable queues and their messages stay on disk.
     */
    public synchronized void stopApp() {
        ctl.run("stop_app");
        appRunning = false;
    }

    /** Starts the application {@link #stopApp} stopped, and returns once it listens again. */
    public synchronized void startApp() {
        ctl.run("start_app");
        ctl.run("await_startup", "--timeout", LOOK_TIMEOUT_SECONDS);
        appRunning = true;
    }

    /**
     * Stops the node entirely (the VM halts) and starts it again on the same data directory and port:
     * durable quorum queues and their persistent messages survive it.
     */
    public synchronized void restart() {
        stopNode();
        startNode();
    }

    /**
     * SIGKILL of the node's Erlang VM ({@code beam.smp}, the child of the {@code rabbitmq-server} script), as a
     * crash would end it: connections reset, nothing flushed or closed politely; the script ends with its child.
     * {@link #startAgain()} starts the node again on the same data directory and port.
     */
    public synchronized void kill9() {
        appRunning = false;
        if (process == null || !process.isAlive()) {
            return;
        }
        process.children().filter(child -> child.info().command().orElse("").endsWith("/beam.smp"))
                .forEach(ProcessHandle::destroyForcibly);
        try {
            if (!process.waitFor(STOP_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                kill();
                throw new AssertionError("RabbitMQ node " + node + " was still running " + STOP_BOUND
                        + " after its VM was killed");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            kill();
        }
    }

    /** Starts a node that is down ({@link #kill9()}, or died) again, and returns once it is ready; nothing if it runs. */
    public synchronized void startAgain() {
        if (!process.isAlive()) {
            startNode();
        } else if (!appRunning) {
            startApp();
        }
    }

    /** Stops the node, and deletes its data and configuration; its logs stay in {@link ServerLogs#DIR}. */
    @Override
    public synchronized void close() {
        try {
            if (process != null) {
                stopNode();
            }
        } finally {
            if (Files.exists(dir)) {
                deleteTree(dir);
            }
            synchronized (PrivateRabbit.class) {
                if (shared == this) {
                    shared = null;
                }
            }
        }
    }

    private synchronized void startNode() {
        long started = System.nanoTime();
        try {
            ProcessBuilder builder = new ProcessBuilder(SERVER).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(consoleLog));
            Map<String, String> env = builder.environment();
            // nothing of the JVM's RabbitMQ or Erlang settings (an app's RABBITMQ_HOST, an ERL_FLAGS) reaches the node
            env.keySet().removeIf(key -> key.startsWith("RABBITMQ_") || key.startsWith("ERL_"));
            env.putAll(environment);
            process = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + SERVER + " for " + node, e);
        }
        RabbitmqCtl.Outcome last = Await.upTo(START_BOUND, () -> {
            if (!process.isAlive()) {
                throw new AssertionError("RabbitMQ node " + node + " exited " + process.exitValue()
                        + " while starting; " + consoleLog + " ends:\n" + ServerLogs.tail(consoleLog, 30));
            }
            return ctl.attempt("await_startup", "--timeout", LOOK_TIMEOUT_SECONDS);
        }, RabbitmqCtl.Outcome::ok);
        if (!last.ok()) {
            throw new AssertionError("RabbitMQ node " + node + " did not start within " + START_BOUND
                    + "; rabbitmqctl await_startup said:\n" + last.output() + "\n" + consoleLog + " ends:\n"
                    + ServerLogs.tail(consoleLog, 30));
        }
        lastStart = Duration.ofNanos(System.nanoTime() - started);
        appRunning = true;
    }

    /** {@code rabbitmqctl stop}, then the process's end; a node that does not stop is terminated, then killed. */
    private void stopNode() {
        appRunning = false;
        if (!process.isAlive()) {
            return;
        }
        RabbitmqCtl.Outcome stop = ctl.attempt("stop");
        try {
            if (process.waitFor(STOP_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                return;
            }
            process.destroy(); // the script's TERM trap stops the VM gracefully
            if (!process.waitFor(STOP_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                kill();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            kill();
        }
        throw new AssertionError("RabbitMQ node " + node + " did not stop within " + STOP_BOUND
                + " of rabbitmqctl stop (exit " + stop.exit() + "): " + stop.output());
    }

    /** Kills the Erlang VM as well as the script that started it, which alone would leave the VM running. */
    private void kill() {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + root, e);
        }
    }
}
