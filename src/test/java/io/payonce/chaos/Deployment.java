package io.payonce.chaos;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import io.payonce.support.AppProcess;
import io.payonce.support.Gateway;
import io.payonce.support.MysqlProxy;
import io.payonce.support.MysqlProxy.StatementCount;
import io.payonce.support.PayClient;
import io.payonce.support.PrivateRabbit;
import io.payonce.support.QueueClient;
import io.payonce.support.RabbitVhost;
import io.payonce.support.TcpProxy;
import io.payonce.support.ThrowawayRedis;

/**
 * The system under chaos, all on loopback: two or more packaged instances, each pair behind its own nginx
 * running the shipped gateway configuration; one MariaDB database of the run's own (dropped and created
 * anew) that each instance reaches through a {@link MysqlProxy} of its own, so that a COMMIT (or its answer)
 * can be held on one instance's way (Flyway's JDBC connection goes direct); one
 * throwaway {@code redis-server} behind its own proxy; and the channel: the sandbox of one more instance, S,
 * which nothing faults, so its behaviour settings and ledger are the one channel every instance charges,
 * reached through a proxy as well (the network to a provider fails too). The harness reads S directly.
 * S reconciles nothing during a run (its interval is an hour): only the faulted instances do. Every instance
 * also takes pay commands from RabbitMQ: a node of the run's own ({@link PrivateRabbit}, so that it can be
 * killed and started again; the shared broker is never touched), which each instance reaches through a
 * {@link TcpProxy} of its own (so that one instance's broker connection can be cut), a vhost on it with one
 * broker user per merchant, named as the merchant. The node and its data are gone at close, or when the
 * driver is stopped.
 */
final class Deployment implements AutoCloseable {

    static final String PAY = "payonce.pay";
    static final String DEAD = "payonce.dead";
    /** The most dead letters read at the end: a run that dead-letters more has failed already. */
    private static final int DEAD_LETTERS_READ = 100_000;
    private static final String REDIS_SERVER = "/usr/bin/redis-server";
    private static final Duration READY_BOUND = Duration.ofSeconds(90);
    private static final String RABBITMQCTL = "/usr/sbin/rabbitmqctl";
    /** The instances declare the queue as they connect, within seconds of being ready. */
    private static final Duration QUEUE_BOUND = Duration.ofSeconds(60);

    private final ChaosSettings settings;
    private final ThrowawayRedis redis = new ThrowawayRedis();
    private boolean redisStarted;
    /** The redis-server started after a kill, on the throwaway's port; null while the original runs. */
    private Process restartedRedis;
    private int redisStarts = 1;
    /** Instance i's way to MySQL, and the openings (payment records inserted) it has run through it. */
    private final List<MysqlProxy> mysql = new ArrayList<>();
    private final List<StatementCount> openings = new ArrayList<>();
    private AppProcess sandbox;
    private TcpProxy channel;
    private final List<AppProcess> instances = new ArrayList<>();
    private final List<Gateway> gateways = new ArrayList<>();
    private PrivateRabbit brokerNode;
    private RabbitVhost broker;
    private final Map<String, RabbitVhost.Credentials> brokerUsers = new LinkedHashMap<>();
    /** Instance i's way to the broker. */
    private final List<TcpProxy> brokerWays = new ArrayList<>();
    /** The harness's own connection (as guest, direct): the queue's depth, the dead letters. */
    private QueueClient queueWatch;
    /** Should the driver be stopped (SIGTERM, a timeout), what it started dies with it, its broker node included. */
    private final Thread orphanGuard = new Thread(() -> {
        closeBroker();
        ProcessHandle.current().descendants().forEach(ProcessHandle::destroyForcibly);
    }, "chaos-orphan-guard");

    Deployment(ChaosSettings settings) {
        this.settings = settings;
    }

    /** Skips or fails early, naming what this machine lacks. */
    static String missingTools() {
        if (!new File("/usr/sbin/nginx").canExecute()) {
            return "nginx is not installed (scripts/services.sh --test-tools installs it)";
        }
        if (!new File(REDIS_SERVER).canExecute()) {
            return "redis-server is not installed (scripts/services.sh --test-tools installs it)";
        }
        if (!new File(RABBITMQCTL).canExecute()) {
            return "RabbitMQ is not installed (scripts/services.sh installs and starts it)";
        }
        try {
            AppProcess.packaged();
        } catch (IllegalStateException missing) {
            return missing.getMessage();
        }
        return null;
    }

    void start() throws Exception {
        Runtime.getRuntime().addShutdownHook(orphanGuard);
        recreateDatabase();
        // the broker node boots (an Erlang VM: seconds) while Redis and S start
        FutureTask<PrivateRabbit> booting = new FutureTask<>(PrivateRabbit::start);
        Thread.ofPlatform().daemon().name("chaos-broker-start").start(booting);
        Map<String, String> viaProxy;
        try {
            viaProxy = startRedisAndSandbox();
        } finally {
            brokerNode = booting.get(PrivateRabbit.START_BOUND.toSeconds() + 30, TimeUnit.SECONDS);
        }
        broker = brokerNode.vhost(Chaos.class);
        for (String merchant : settings.merchantIds()) {
            brokerUsers.put(merchant, broker.user(merchant));
        }
        channel = new TcpProxy(sandbox.port());
        for (int i = 0; i < settings.instances(); i++) {
            MysqlProxy way = new MysqlProxy(settings.dbPort());
            mysql.add(way);
            openings.add(way.count("(?is)^\\s*INSERT\\s+INTO\\s+payments\\b"));
            TcpProxy toBroker = new TcpProxy(broker.port());
            brokerWays.add(toBroker);
            AppProcess instance = AppProcess.named("chaos-" + i);
            broker.appEnv().forEach(instance::env);
            instances.add(instance
                    .channel("http://127.0.0.1:" + channel.port() + "/sandbox")
                    .env("PAYONCE_SANDBOX_ENABLED", "false")
                    .env("QUARKUS_DATASOURCE_REACTIVE_URL",
                            "mysql://127.0.0.1:" + way.port() + "/" + settings.dbName())
                    .env("QUARKUS_DATASOURCE_JDBC_URL", settings.jdbcUrl())
                    .env("QUARKUS_REDIS_HOSTS", viaProxy.get("quarkus.redis.hosts"))
                    .env("PAYONCE_CHANNEL_TIMEOUT", ChaosSettings.setting(ChaosSettings.CHANNEL_TIMEOUT))
                    .env("PAYONCE_DATABASE_TIMEOUT", ChaosSettings.setting(ChaosSettings.DATABASE_TIMEOUT))
                    .env("PAYONCE_RECONCILE_MIN_AGE", ChaosSettings.setting(ChaosSettings.MIN_AGE))
                    .env("PAYONCE_IDEMPOTENCY_LEASE", ChaosSettings.setting(ChaosSettings.LEASE))
                    .env("PAYONCE_RECONCILE_INTERVAL", ChaosSettings.setting(ChaosSettings.RECONCILE_INTERVAL))
                    .env("PAYONCE_RECONCILE_GIVE_UP_AFTER", ChaosSettings.setting(ChaosSettings.GIVE_UP_AFTER))
                    .env("PAYONCE_IDEMPOTENCY_WAIT_TIMEOUT", ChaosSettings.setting(ChaosSettings.WAIT_BOUND))
                    .env("PAYONCE_QUEUE_ENABLED", "true")
                    .env("RABBITMQ_PORT", Integer.toString(toBroker.port())));
        }
        AppProcess.startAll(instances.toArray(AppProcess[]::new));
        queueWatch = QueueClient.connect(broker, RabbitVhost.Credentials.GUEST);
        queueWatch.awaitQueue(PAY, QUEUE_BOUND);
        String[] merchants = settings.merchantIds().toArray(String[]::new);
        for (int k = 0; 2 * k < instances.size(); k++) {
            gateways.add(Gateway.start(instances.get(2 * k), instances.get((2 * k + 1) % instances.size()), merchants));
        }
    }

    /** Redis and S, which migrates the fresh schema alone, before the instances start together; Redis's address. */
    private Map<String, String> startRedisAndSandbox() throws IOException {
        Map<String, String> viaProxy = redis.start();
        redisStarted = true;
        String direct = "mysql://" + settings.dbHost() + ":" + settings.dbPort() + "/" + settings.dbName();
        sandbox = AppProcess.named("chaos-sandbox")
                .env("QUARKUS_DATASOURCE_REACTIVE_URL", direct)
                .env("QUARKUS_DATASOURCE_JDBC_URL", settings.jdbcUrl())
                // S needs no Redis; should anything in it connect, it is to the throwaway, never the shared one
                .env("PAYONCE_REDIS_ENABLED", "false")
                .env("QUARKUS_REDIS_HOSTS", "redis://127.0.0.1:" + ThrowawayRedis.redisPort())
                // its late answers (timeout_after_accept) come 1 s after the instances' channel timeout
                .env("PAYONCE_CHANNEL_TIMEOUT", ChaosSettings.setting(ChaosSettings.CHANNEL_TIMEOUT))
                .env("PAYONCE_RECONCILE_INTERVAL", "1h");
        // S first: it migrates the fresh schema alone, before the instances start together
        sandbox.start().awaitReady();
        return viaProxy;
    }

    List<AppProcess> instances() {
        return instances;
    }

    List<Gateway> gateways() {
        return gateways;
    }

    /** S's sandbox as {@code merchant} sees it: behaviour settings, ledger, query. */
    PayClient channel(String merchant) {
        return new PayClient(sandbox, merchant);
    }

    /** Every instance's way to MySQL, in the instances' order. */
    List<MysqlProxy> mysql() {
        return mysql;
    }

    /** How many openings instance {@code i} has run so far: each an owner on its way to the channel. */
    int openings(int i) {
        return openings.get(i).runs();
    }

    /** What the instances' MySQL proxies could not follow (a hold on such a connection catches nothing). */
    List<String> mysqlLostTrack() {
        return mysql.stream().flatMap(way -> way.lostTrack().stream()).toList();
    }

    /** The run's vhost on the broker, where the merchants' queue clients connect (directly, never faulted). */
    RabbitVhost broker() {
        return broker;
    }

    /** The merchants that have a broker user. */
    List<String> brokerMerchants() {
        return List.copyOf(brokerUsers.keySet());
    }

    /** The broker user of {@code merchant}, named as the merchant. */
    RabbitVhost.Credentials brokerUser(String merchant) {
        return brokerUsers.get(merchant);
    }

    /** Every instance's way to the broker, in the instances' order. */
    List<TcpProxy> brokerWays() {
        return brokerWays;
    }

    /** The run's broker node, which a fault kills and starts again. */
    PrivateRabbit brokerNode() {
        return brokerNode;
    }

    /** How many commands wait in the pay queue, ready for delivery (those an instance holds not counted). */
    long commandsWaiting() throws IOException {
        return watch().messageCount(PAY);
    }

    /**
     * Every message in {@link #DEAD}, read and left there (taken unacknowledged, returned as the channel closes):
     * each command the entrance dead-lettered, with its merchant (its {@code user_id}), key and when it died
     * ({@code x-death}'s time, whole seconds).
     */
    List<Books.DeadLetter> deadLetters() throws IOException {
        List<Books.DeadLetter> dead = new ArrayList<>();
        try (com.rabbitmq.client.Channel channel = watch().openChannel()) {
            com.rabbitmq.client.GetResponse message;
            while (dead.size() < DEAD_LETTERS_READ && (message = channel.basicGet(DEAD, false)) != null) {
                dead.add(Books.DeadLetter.of(message.getProps()));
            }
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IOException("closing a channel timed out", e);
        }
        return dead;
    }

    /** The harness's connection, made again when the node it was on was killed. */
    private synchronized QueueClient watch() throws IOException {
        if (!queueWatch.isOpen()) {
            queueWatch = queueWatch.resume();
        }
        return queueWatch;
    }

    /** The instances' way to the channel. */
    TcpProxy channelPath() {
        return channel;
    }

    TcpProxy redisProxy() {
        return ThrowawayRedis.proxy();
    }

    /** Starts instance {@code i} again with its settings and waits until it is ready. */
    void restart(int i) throws IOException, InterruptedException {
        AppProcess app = instances.get(i);
        if (!app.isAlive()) {
            app.start();
        }
        long deadline = System.nanoTime() + READY_BOUND.toNanos();
        // awaitReady gives up after its own minute; a restart on a machine busy with other builds may need more
        while (true) {
            try {
                app.awaitReady();
                return;
            } catch (AssertionError notYet) {
                if (!app.isAlive() || System.nanoTime() > deadline) {
                    throw notYet;
                }
            }
        }
    }

    /**
     * SIGKILL of the throwaway redis-server: connections reset, new ones refused, everything it held gone;
     * false when there was none. Only a child of this process serving the throwaway's port is killed
     * (redis-server writes its address over its command line, which Java's process handles do not show:
     * /proc does).
     */
    boolean killRedis() {
        String address = ":" + ThrowawayRedis.redisPort();
        boolean killed = false;
        for (ProcessHandle child : ProcessHandle.current().children().toList()) {
            if (child.info().command().orElse("").contains("redis") && commandLine(child).contains(address)) {
                child.destroyForcibly();
                child.onExit().join();
                killed = true;
            }
        }
        return killed;
    }

    private static String commandLine(ProcessHandle process) {
        try {
            return Files.readString(Path.of("/proc", String.valueOf(process.pid()), "cmdline"), StandardCharsets.ISO_8859_1);
        } catch (IOException | RuntimeException gone) {
            return "";
        }
    }

    /** A new, empty redis-server on the throwaway's port, as a supervisor restarts a killed one. */
    void restartRedis() throws IOException, InterruptedException {
        if ("+PONG".equals(ping())) {
            return;
        }
        int port = ThrowawayRedis.redisPort();
        restartedRedis = new ProcessBuilder(REDIS_SERVER, "--port", String.valueOf(port), "--save", "", "--appendonly",
                "no", "--bind", "127.0.0.1")
                .redirectErrorStream(true)
                .redirectOutput(new File("target/throwaway-redis-" + port + "-" + (++redisStarts) + ".log"))
                .start();
        for (int i = 0; i < 200 && !"+PONG".equals(ping()); i++) {
            Thread.sleep(25);
        }
    }

    void flushRedis() {
        ThrowawayRedis.command("FLUSHALL");
    }

    private static String ping() {
        try {
            return ThrowawayRedis.command("PING");
        } catch (IllegalStateException down) {
            return null;
        }
    }

    /** A connection to the run's database, direct, never through the proxy. */
    Connection database() throws SQLException {
        return DriverManager.getConnection(settings.jdbcUrl(), settings.dbUser(), settings.dbPassword());
    }

    private void recreateDatabase() throws SQLException {
        String server = "jdbc:mariadb://" + settings.dbHost() + ":" + settings.dbPort() + "/";
        try (Connection c = DriverManager.getConnection(server, settings.dbUser(), settings.dbPassword());
                Statement s = c.createStatement()) {
            s.execute("DROP DATABASE IF EXISTS `" + settings.dbName() + "`");
            s.execute("CREATE DATABASE `" + settings.dbName() + "`");
        }
    }

    /**
     * Gateways, instances, S, the proxies, every redis-server this run started, then (whatever failed before) the
     * broker node.
     */
    @Override
    public void close() throws InterruptedException {
        try {
            for (Gateway gateway : gateways) {
                gateway.close();
            }
            for (AppProcess app : instances) {
                // killed: a polite stop waits out in-flight requests, and nothing is checked after this
                if (app.isAlive()) {
                    app.kill();
                }
            }
            if (sandbox != null && sandbox.isAlive()) {
                sandbox.kill();
            }
            for (MysqlProxy way : mysql) {
                way.close();
            }
            for (TcpProxy way : brokerWays) {
                way.close();
            }
            if (channel != null) {
                channel.close();
            }
            if (restartedRedis != null) {
                restartedRedis.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
            if (redisStarted) {
                redis.stop();
            }
            try {
                Runtime.getRuntime().removeShutdownHook(orphanGuard);
            } catch (IllegalStateException | IllegalArgumentException exitingOrNeverAdded) {
                // the hook runs, or was never added
            }
        } finally {
            closeBroker();
        }
    }

    /** The harness's connection, then the node with its vhost, users and data. */
    private synchronized void closeBroker() {
        if (queueWatch != null) {
            queueWatch.close();
            queueWatch = null;
        }
        broker = null;
        if (brokerNode != null) {
            PrivateRabbit node = brokerNode;
            brokerNode = null;
            node.close();
        }
    }
}
