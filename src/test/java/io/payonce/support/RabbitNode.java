package io.payonce.support;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One RabbitMQ node process of the tests' own, what a {@link PrivateRabbit} and each node of a
 * {@link RabbitCluster} are: its node name, its AMQP listener and distribution port on loopback, its data,
 * configuration, environment and enabled-plugins files under a directory of its own, the Erlang cookie of a
 * home it is given (a cluster's nodes share one), its logs under {@link ServerLogs#DIR}. It reads nothing of
 * the shared node's configuration, enables no plugin, and lets guest in from loopback only (RabbitMQ's
 * default). The node is started in the foreground as a child process of the JVM; its {@code rabbitmqctl}
 * runs with the same home, so it can reach this node and its cluster and no other (the shared node's cookie
 * is another).
 *
 * <p>The packaged {@code rabbitmq-server} script starts the Erlang VM ({@code beam.smp}) as a child of its
 * own and turns a TERM into a graceful stop, so killing the script alone leaves the VM running:
 * {@link #kill9} kills the VM itself. The VM's command line carries {@code -payonce_node <name>}, a flag
 * the VM ignores, so {@code ps aux | grep <name>} finds it (the node name itself reaches the VM through
 * the environment, which {@code ps} does not show).
 */
final class RabbitNode {

    static final String HOST = "127.0.0.1";
    /** A start takes about five seconds here; a machine busy with other builds may make that many more. */
    static final Duration START_BOUND = Duration.ofSeconds(90);
    /** A stop closes the connections, flushes the queues and halts the VM: a second or two. */
    private static final Duration STOP_BOUND = Duration.ofSeconds(30);
    /** A VM sent SIGKILL is gone within milliseconds, and the script waiting for it ends with it. */
    private static final Duration KILL_BOUND = Duration.ofSeconds(10);
    private static final String SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server";
    private static final String VM = "beam.smp";
    /** Each look at a starting node is a CLI run of under a second; the node has its whole START_BOUND. */
    private static final String LOOK_TIMEOUT_SECONDS = "10";
    /** A loopback connection is taken or refused at once; this bounds one to a listener too busy to accept. */
    private static final int CONNECT_TIMEOUT_MS = 1_000;

    private final String name;
    private final int port;
    private final File consoleLog;
    private final Path dir;
    private final Map<String, String> environment;
    private final RabbitmqCtl ctl;
    private Process process;
    /** When {@link #spawn} started the process, in {@link System#nanoTime}'s terms. */
    private long spawnedAt;
    private boolean appRunning;
    private Duration lastStart;

    private RabbitNode(String name, int port, Path dir, File consoleLog, Map<String, String> environment) {
        this.name = name;
        this.port = port;
        this.dir = dir;
        this.consoleLog = consoleLog;
        this.environment = environment;
        this.ctl = RabbitmqCtl.privateNode(name, Map.of("HOME", environment.get("HOME"),
                "RABBITMQ_CONF_ENV_FILE", environment.get("RABBITMQ_CONF_ENV_FILE")));
    }

    /**
     * Makes {@code dir/home} holding a fresh random Erlang cookie, readable by its owner only (Erlang refuses
     * any other mode): the home of every node and CLI run of one broker, and of nothing else.
     */
    static Path home(Path dir) throws IOException {
        Path home = Files.createDirectory(dir.resolve("home"));
        Path cookie = home.resolve(".erlang.cookie");
        Files.writeString(cookie, RabbitVhost.random(32).toUpperCase(), StandardCharsets.US_ASCII);
        Files.setPosixFilePermissions(cookie, PosixFilePermissions.fromString("r--------"));
        return home;
    }

    /**
     * Configures node {@code name} in {@code dir}, which it takes for its own, with the cookie of {@code home}
     * and {@code erlArgs} added to its VM's arguments; free loopback ports are taken for it, nothing is started.
     */
    static RabbitNode configure(String name, Path dir, Path home, String erlArgs) throws IOException {
        int port = LoopbackPorts.take();
        int distPort = LoopbackPorts.take();
        Path config = Files.writeString(dir.resolve("rabbitmq.conf"),
                "listeners.tcp.1 = " + HOST + ":" + port + "\n", StandardCharsets.US_ASCII);
        Path plugins = Files.writeString(dir.resolve("enabled_plugins"), "[].\n", StandardCharsets.US_ASCII);
        Path envFile = Files.writeString(dir.resolve("rabbitmq-env.conf"),
                "# this node's own: /etc/rabbitmq/rabbitmq-env.conf names the shared node\n",
                StandardCharsets.US_ASCII);
        String shortName = name.substring(0, name.indexOf('@'));
        File logs = new File(ServerLogs.DIR, shortName);
        logs.mkdirs();

        Map<String, String> environment = new LinkedHashMap<>();
        environment.put("HOME", home.toString());
        environment.put("RABBITMQ_NODENAME", name);
        environment.put("RABBITMQ_NODE_IP_ADDRESS", HOST);
        environment.put("RABBITMQ_NODE_PORT", String.valueOf(port));
        // the one port other nodes and the CLI reach it on (through epmd): inet_dist_listen_min = max
        environment.put("RABBITMQ_DIST_PORT", String.valueOf(distPort));
        environment.put("RABBITMQ_MNESIA_BASE", Files.createDirectory(dir.resolve("mnesia")).toString());
        environment.put("RABBITMQ_LOG_BASE", logs.getAbsolutePath());
        environment.put("RABBITMQ_CONFIG_FILE", config.toString());
        environment.put("RABBITMQ_ADVANCED_CONFIG_FILE", dir.resolve("advanced.config").toString());
        environment.put("RABBITMQ_ENABLED_PLUGINS_FILE", plugins.toString());
        environment.put("RABBITMQ_PID_FILE", dir.resolve("node.pid").toString());
        environment.put("RABBITMQ_CONF_ENV_FILE", envFile.toString());
        environment.put("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                ("-kernel inet_dist_use_interface {127,0,0,1} -payonce_node " + name + " " + erlArgs).strip());

        RabbitNode node = new RabbitNode(name, port, dir, new File(logs, "console.log"), environment);
        ServerLogs.register(node.consoleLog);
        ServerLogs.register(new File(logs, name + ".log"));
        return node;
    }

    /** The Erlang node name. */
    String name() {
        return name;
    }

    /** The AMQP port: the same across every stop and start. */
    int port() {
        return port;
    }

    RabbitmqCtl ctl() {
        return ctl;
    }

    /** How long the last start of the node took, from spawning it to {@code await_startup} answering. */
    synchronized Duration lastStart() {
        return lastStart;
    }

    /** Whether the node's VM runs (started, and neither stopped nor killed since). */
    synchronized boolean running() {
        return process != null && process.isAlive();
    }

    /** Whether the node runs with its RabbitMQ application started. */
    synchronized boolean appRunning() {
        return running() && appRunning;
    }

    /** Starts the node and returns once it is ready. */
    synchronized void start() {
        spawn();
        awaitStarted();
    }

    /**
     * Starts the node's process and returns at once: nodes of one cluster boot side by side, and one
     * restarted after all were down waits in its boot for the others' tables. {@link #awaitStarted} follows.
     */
    synchronized void spawn() {
        if (running()) {
            throw new IllegalStateException("RabbitMQ node " + name + " runs already");
        }
        lastStart = null;
        try {
            ProcessBuilder builder = new ProcessBuilder(SERVER).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(consoleLog));
            Map<String, String> env = builder.environment();
            // nothing of the JVM's RabbitMQ or Erlang settings (an app's RABBITMQ_HOST, an ERL_FLAGS) reaches the node
            env.keySet().removeIf(key -> key.startsWith("RABBITMQ_") || key.startsWith("ERL_"));
            env.putAll(environment);
            spawnedAt = System.nanoTime();
            process = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + SERVER + " for " + name, e);
        }
    }

    /**
     * Waits until the node {@link #spawn} started answers as booted, {@link #START_BOUND} after its spawn at
     * the most: {@link #awaitListening}, then {@code rabbitmqctl await_startup}.
     */
    synchronized void awaitStarted() {
        awaitListening();
        Process spawned = process;
        RabbitmqCtl.Outcome last = Await.upTo(left(spawnedAt + START_BOUND.toNanos()), () -> {
            checkRunning(spawned);
            return ctl.attempt("await_startup", "--timeout", LOOK_TIMEOUT_SECONDS);
        }, RabbitmqCtl.Outcome::ok);
        if (!last.ok()) {
            throw new AssertionError("RabbitMQ node " + name + " did not start within " + START_BOUND
                    + "; rabbitmqctl await_startup said:\n" + last.output() + "\n" + consoleLog + " ends:\n"
                    + ServerLogs.tail(consoleLog, 30));
        }
        lastStart = Duration.ofNanos(System.nanoTime() - spawnedAt);
        appRunning = true;
    }

    /**
     * Waits until the AMQP listener of the node {@link #spawn} started takes a connection, {@link #START_BOUND}
     * after its spawn at the most. The listener opens near the end of the boot, its core steps done; a
     * {@code stop_app} may follow at once, as it waits for the boot's end itself. A CLI run is an Erlang VM
     * of its own, about a second of CPU, so none is spawned before this: looking does not slow the boots it
     * waits for.
     */
    synchronized void awaitListening() {
        Process spawned = process;
        boolean listening = Await.upTo(left(spawnedAt + START_BOUND.toNanos()), () -> {
            checkRunning(spawned);
            return listening();
        });
        if (!listening) {
            throw new AssertionError("RabbitMQ node " + name + " did not listen on " + HOST + ":" + port
                    + " within " + START_BOUND + "; " + consoleLog + " ends:\n" + ServerLogs.tail(consoleLog, 30));
        }
    }

    /** Fails, with the end of its console, once {@code spawned} has exited: a boot that failed ends the wait. */
    private void checkRunning(Process spawned) {
        if (!spawned.isAlive()) {
            throw new AssertionError("RabbitMQ node " + name + " exited " + spawned.exitValue()
                    + " while starting; " + consoleLog + " ends:\n" + ServerLogs.tail(consoleLog, 30));
        }
    }

    private static Duration left(long deadline) {
        return Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
    }

    /** Whether the node's AMQP listener takes a TCP connection (closed at once, before any AMQP is said). */
    private boolean listening() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(HOST, port), CONNECT_TIMEOUT_MS);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Stops the RabbitMQ application, the Erlang VM left running: the listener closes and every connection
     * is closed by the broker; durable queues and their messages stay on disk.
     */
    synchronized void stopApp() {
        ctl.run("stop_app");
        appRunning = false;
    }

    /** Starts the application {@link #stopApp} stopped, and returns once it listens again. */
    synchronized void startApp() {
        // returns once the application has started, its boot steps (the listeners' among them) run
        ctl.run("start_app");
        appRunning = true;
    }

    /**
     * {@code rabbitmqctl stop}, then the process's end; a node that does not stop is terminated, then
     * killed, and the stop fails. A node not running is left as it is.
     */
    synchronized void stop() {
        appRunning = false;
        if (!running()) {
            return;
        }
        RabbitmqCtl.Outcome stop = ctl.attempt("stop");
        try {
            if (process.waitFor(STOP_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                return;
            }
            process.destroy(); // the script's TERM trap stops the VM gracefully
            if (!process.waitFor(STOP_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                kill9();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            kill9();
        }
        throw new AssertionError("RabbitMQ node " + name + " did not stop within " + STOP_BOUND
                + " of rabbitmqctl stop (exit " + stop.exit() + "): " + stop.output());
    }

    /**
     * Kills the node's Erlang VM with SIGKILL, as a crash of its machine would end it: nothing is flushed and
     * no peer is told. The script that started it sees it die and exits, having reaped it; the VM's helper
     * processes, orphaned, are killed too. Returns once the VM and the script are gone; a node not running
     * is left as it is.
     */
    synchronized void kill9() {
        appRunning = false;
        if (process == null) {
            return;
        }
        List<ProcessHandle> family = process.descendants().toList();
        List<ProcessHandle> vms = family.stream().filter(RabbitNode::isVm).toList();
        // the VM first and alone: killed after the script, it would run on, a child of init
        vms.forEach(ProcessHandle::destroyForcibly);
        Process script = process;
        if (vms.isEmpty() || !Await.upTo(KILL_BOUND, () -> !script.isAlive())) {
            // no VM found, or a script that outlives it: all of them, at once
            process.destroyForcibly();
        }
        family.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
        if (!Await.upTo(KILL_BOUND, () -> !script.isAlive() && vms.stream().noneMatch(ProcessHandle::isAlive))) {
            throw new AssertionError("RabbitMQ node " + name + " (script " + script.pid() + ", VM " + vms
                    + ") outlived SIGKILL by " + KILL_BOUND);
        }
    }

    /** The Erlang VM's process, for a test that looks at it: empty while the node is not running. */
    synchronized Optional<ProcessHandle> vm() {
        if (!running()) {
            return Optional.empty();
        }
        return process.descendants().filter(RabbitNode::isVm).findFirst();
    }

    /** Deletes {@code root} and all below it; nothing if it is not there. */
    static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + root, e);
        }
    }

    private static boolean isVm(ProcessHandle handle) {
        return handle.info().command().map(command -> command.endsWith("/" + VM)).orElse(false);
    }
}
