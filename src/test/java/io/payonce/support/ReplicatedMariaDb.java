package io.payonce.support;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A MariaDB primary and one replica of the test's own, never the shared server on 3306: two
 * {@code mariadbd} processes on free loopback ports, each with a data directory of its own under
 * {@code target/}, replicating by GTID in row format, semi-synchronously with the primary waiting
 * {@code AFTER_SYNC}: a transaction is committed, and visible to other sessions, only once the replica
 * has written it to its relay log. The timeout after which the primary falls back to asynchronous
 * replication is longer than any test, so no commit goes unacknowledged unnoticed; {@link #semiSync()}
 * shows whether one did. A test kills the primary ({@link #killPrimary()}) and promotes the replica
 * ({@link #promoteReplica()}) as a failover manager would; a {@link TcpProxy} is the one address the
 * application knows, moved to the promoted replica ({@link TcpProxy#pointAt(int)}). The servers' logs stay
 * under {@code target/replicated-mariadb/<name>} ({@link ServerLogs}, printed when a start or a test fails).
 */
public final class ReplicatedMariaDb implements AutoCloseable {

    private static final String MARIADBD = "/usr/sbin/mariadbd";
    /**
     * Far beyond a test's life: a commit the replica does not acknowledge blocks rather than quietly
     * becoming asynchronous. A test that means to show the fallback shortens it.
     */
    public static final Duration SEMI_SYNC_TIMEOUT = Duration.ofMinutes(10);
    private static final Duration START_BOUND = Duration.ofSeconds(60);
    /** How long a promotion waits for the replica to apply what it had received. */
    private static final Duration APPLY_BOUND = Duration.ofSeconds(30);
    /** A Unix socket path longer than this does not fit sockaddr_un. */
    private static final int MAX_SOCKET_PATH = 107;

    private final File dir;
    private final String database;
    private final Server primary;
    private final Server replica;
    private final Thread orphanGuard;

    private ReplicatedMariaDb(String name, String database) throws IOException {
        this.dir = new File("target/replicated-mariadb/" + name).getAbsoluteFile();
        this.database = database;
        this.primary = new Server("primary", 1, LoopbackPorts.take());
        this.replica = new Server("replica", 2, LoopbackPorts.take());
        // should the test JVM end without close(), the servers end with it
        this.orphanGuard = new Thread(() -> {
            primary.destroy();
            replica.destroy();
        }, "replicated-mariadb-" + name + "-guard");
    }

    /** A primary and a replica whose files live under {@code target/replicated-mariadb/<name>}; not started yet. */
    public static ReplicatedMariaDb named(String name, String database) throws IOException {
        return new ReplicatedMariaDb(name, database);
    }

    /** What the primary reports of semi-synchronous replication. */
    public record SemiSync(boolean enabled, String waitPoint, long timeoutMs, boolean on, long clients,
            long acknowledgedCommits, long unacknowledgedCommits) {

        /** Every commit waits, unseen by other sessions, until a connected replica has it. */
        public boolean lossless() {
            return enabled && "AFTER_SYNC".equals(waitPoint) && on && clients > 0;
        }

        @Override
        public String toString() {
            return "enabled " + enabled + ", wait point " + waitPoint + ", timeout " + timeoutMs + " ms, status "
                    + (on ? "ON" : "OFF") + ", " + clients + " replica(s), commits acknowledged " + acknowledgedCommits
                    + ", not acknowledged " + unacknowledgedCommits;
        }
    }

    /** How the replica was promoted: the last transaction it applied, and how long promotion took. */
    public record Promotion(String appliedGtid, long tookMs) {
    }

    /**
     * Fresh data directories, both servers, replication set up, then {@link #database} created on the
     * primary and applied on the replica. Returns once the replica acknowledges commits.
     */
    public ReplicatedMariaDb start() throws IOException, InterruptedException, SQLException {
        Runtime.getRuntime().addShutdownHook(orphanGuard);
        try {
            installBoth();
            startBoth();
            return this;
        } catch (IOException | InterruptedException | SQLException | RuntimeException | AssertionError e) {
            ServerLogs.print("the primary and replica " + dir.getName() + " did not start: " + e, logs());
            close();
            throw e;
        }
    }

    /** Both data directories, fresh and installed side by side; nothing started. */
    void installBoth() throws IOException, InterruptedException {
        deleteRecursively(dir.toPath());
        dir.mkdirs();
        MariaDbInstall installPrimary = primary.install();
        MariaDbInstall installReplica = replica.install();
        installPrimary.await();
        installReplica.await();
    }

    private List<File> logs() {
        return List.of(primary.installLog(), primary.errorLog(), primary.outLog(), replica.installLog(),
                replica.errorLog(), replica.outLog());
    }

    private void startBoth() throws IOException, InterruptedException, SQLException {

        primary.start(List.of(
                "--rpl-semi-sync-master-enabled=ON",
                "--rpl-semi-sync-master-wait-point=AFTER_SYNC",
                "--rpl-semi-sync-master-timeout=" + SEMI_SYNC_TIMEOUT.toMillis()));
        replica.start(List.of(
                "--rpl-semi-sync-slave-enabled=ON",
                "--relay-log=relay-bin",
                "--read-only=ON"));
        primary.awaitReady();
        replica.awaitReady();

        replica.execute("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = " + primary.port
                + ", MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1");
        replica.execute("START SLAVE");
        // until the replica is connected, a commit would wait for it: nothing is written before
        Await.until("the replica to acknowledge the primary's commits", START_BOUND, this::semiSync, SemiSync::lossless);
        primary.execute("CREATE DATABASE `" + database + "`");
        awaitReplicaApplied(primary.queryString("SELECT @@gtid_binlog_pos"));
    }

    public int primaryPort() {
        return primary.port;
    }

    public int replicaPort() {
        return replica.port;
    }

    public String database() {
        return database;
    }

    /** A connection to the primary's database, directly. */
    public Connection primary() throws SQLException {
        return primary.connect(database);
    }

    /** A connection to the replica's database, directly: the promoted one after {@link #promoteReplica()}. */
    public Connection replica() throws SQLException {
        return replica.connect(database);
    }

    /** What the primary reports now of semi-synchronous replication. */
    public SemiSync semiSync() throws SQLException {
        try (Connection c = primary.connect("");
                Statement s = c.createStatement();
                ResultSet rows = s.executeQuery("SELECT @@rpl_semi_sync_master_enabled,"
                        + " @@rpl_semi_sync_master_wait_point, @@rpl_semi_sync_master_timeout,"
                        + " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
                        + "   WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_STATUS'),"
                        + " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
                        + "   WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_CLIENTS'),"
                        + " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
                        + "   WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_YES_TX'),"
                        + " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
                        + "   WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_NO_TX')")) {
            rows.next();
            return new SemiSync(rows.getBoolean(1), rows.getString(2), rows.getLong(3), "ON".equals(rows.getString(4)),
                    rows.getLong(5), rows.getLong(6), rows.getLong(7));
        }
    }

    /** Sets the primary's semi-sync timeout, after which an unacknowledged commit returns as if replicated. */
    public void semiSyncTimeout(Duration timeout) throws SQLException {
        primary.execute("SET GLOBAL rpl_semi_sync_master_timeout = " + timeout.toMillis());
    }

    /** {@code AFTER_SYNC} (PayOnce's requirement) or {@code AFTER_COMMIT} (MariaDB's default). */
    public void semiSyncWaitPoint(String waitPoint) throws SQLException {
        primary.execute("SET GLOBAL rpl_semi_sync_master_wait_point = " + waitPoint);
    }

    /** The replica stops receiving, and so acknowledging, the primary's transactions, as a lagging or cut-off one. */
    public void stopReplicaReceiving() throws SQLException {
        replica.execute("STOP SLAVE IO_THREAD");
    }

    /** The replica receives again, catches up and acknowledges. */
    public void startReplicaReceiving() throws SQLException {
        replica.execute("START SLAVE IO_THREAD");
    }

    /** SIGKILL of the primary: no shutdown, nothing more sent to the replica. */
    public void killPrimary() throws InterruptedException {
        primary.kill();
    }

    /**
     * Promotes the replica as a failover manager must: stops receiving, waits until the replica has applied
     * every transaction it received (its relay log may hold acknowledged commits not applied yet), then
     * forgets the primary and takes writes. Fails if the relay log is not applied within a bound.
     */
    public Promotion promoteReplica() throws SQLException {
        long started = System.nanoTime();
        replica.execute("STOP SLAVE IO_THREAD");
        String received = replica.slaveStatus("Gtid_IO_Pos");
        if (received != null && !received.isEmpty()) {
            try (Connection c = replica.connect("");
                    PreparedStatement s = c.prepareStatement("SELECT MASTER_GTID_WAIT(?, ?)")) {
                s.setString(1, received);
                s.setLong(2, APPLY_BOUND.toSeconds());
                try (ResultSet rows = s.executeQuery()) {
                    rows.next();
                    if (rows.getInt(1) != 0) {
                        throw new AssertionError("the replica did not apply what it received (" + received + ") within "
                                + APPLY_BOUND + "; see " + replica.errorLog());
                    }
                }
            }
        }
        replica.execute("STOP SLAVE");
        replica.execute("RESET SLAVE ALL");
        replica.execute("SET GLOBAL read_only = OFF");
        return new Promotion(replica.queryString("SELECT @@gtid_slave_pos"), (System.nanoTime() - started) / 1_000_000);
    }

    /** Until the replica's SQL thread has applied {@code gtid}, or fails. */
    private void awaitReplicaApplied(String gtid) throws SQLException {
        try (Connection c = replica.connect("");
                PreparedStatement s = c.prepareStatement("SELECT MASTER_GTID_WAIT(?, ?)")) {
            s.setString(1, gtid);
            s.setLong(2, APPLY_BOUND.toSeconds());
            try (ResultSet rows = s.executeQuery()) {
                rows.next();
                if (rows.getInt(1) != 0) {
                    throw new AssertionError("the replica did not apply " + gtid + " within " + APPLY_BOUND);
                }
            }
        }
    }

    /** Kills both servers (their data is a test's and nothing is checked after this) and deletes their data. */
    @Override
    public void close() throws InterruptedException {
        primary.kill();
        replica.kill();
        try {
            Runtime.getRuntime().removeShutdownHook(orphanGuard);
        } catch (IllegalStateException | IllegalArgumentException notRegisteredOrShuttingDown) {
            // the guard runs or never ran: nothing to undo
        }
        // the logs stay for a failed test's reader; the data directories are tens of megabytes each
        deleteRecursively(primary.datadir.toPath());
        deleteRecursively(replica.datadir.toPath());
    }

    /** One mariadbd: its data directory, port and logs. */
    private final class Server {
        private final String role;
        private final int serverId;
        private final int port;
        private final File datadir;
        private volatile Process process;

        Server(String role, int serverId, int port) {
            this.role = role;
            this.serverId = serverId;
            this.port = port;
            this.datadir = new File(dir, role);
        }

        File errorLog() {
            return ServerLogs.register(new File(dir, role + ".err"));
        }

        File outLog() {
            return ServerLogs.register(new File(dir, role + ".out"));
        }

        File installLog() {
            return new File(dir, role + "-install.log");
        }

        MariaDbInstall install() throws IOException {
            File tmp = new File(dir, role + "-tmp");
            tmp.mkdirs();
            return MariaDbInstall.start("the " + role, datadir, tmp, "root", installLog(),
                    List.of("--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M"));
        }

        void start(List<String> roleOptions) throws IOException {
            String socket = new File(datadir, "mysqld.sock").getPath();
            if (socket.length() > MAX_SOCKET_PATH) {
                throw new IllegalStateException("socket path too long for a Unix socket: " + socket);
            }
            List<String> command = new ArrayList<>(List.of(MARIADBD,
                    // no my.cnf: nothing of the shared server's configuration applies
                    "--no-defaults",
                    "--user=root",
                    "--datadir=" + datadir,
                    "--port=" + port,
                    "--bind-address=127.0.0.1",
                    "--socket=" + socket,
                    "--pid-file=" + new File(datadir, "mysqld.pid"),
                    "--log-error=" + errorLog(),
                    "--skip-name-resolve",
                    "--server-id=" + serverId,
                    "--log-bin=mysql-bin",
                    "--binlog-format=ROW",
                    // a promoted replica keeps a binary log of what it applied, for the next replica
                    "--log-slave-updates=ON",
                    "--gtid-strict-mode=ON",
                    // as the shared server (Debian's configuration), so the schema is the same
                    "--character-set-server=utf8mb4",
                    "--collation-server=utf8mb4_general_ci",
                    "--innodb-buffer-pool-size=32M",
                    "--innodb-log-file-size=8M"));
            command.addAll(roleOptions);
            process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(outLog()))
                    .start();
        }

        void awaitReady() {
            Await.until("the " + role + " mariadbd on port " + port + " to take connections", START_BOUND, () -> {
                if (!process.isAlive()) {
                    throw new AssertionError("the " + role + " mariadbd exited with " + process.exitValue() + "; see "
                            + errorLog());
                }
                try (Connection c = connect("")) {
                    return c.isValid(2);
                } catch (SQLException notYet) {
                    return false;
                }
            });
        }

        Connection connect(String db) throws SQLException {
            return DriverManager.getConnection("jdbc:mariadb://127.0.0.1:" + port + "/" + db
                    + "?connectTimeout=2000&socketTimeout=60000", "root", "");
        }

        void execute(String sql) throws SQLException {
            try (Connection c = connect(""); Statement s = c.createStatement()) {
                s.execute(sql);
            }
        }

        String queryString(String sql) throws SQLException {
            try (Connection c = connect(""); Statement s = c.createStatement(); ResultSet rows = s.executeQuery(sql)) {
                return rows.next() ? rows.getString(1) : null;
            }
        }

        String slaveStatus(String column) throws SQLException {
            try (Connection c = connect(""); Statement s = c.createStatement();
                    ResultSet rows = s.executeQuery("SHOW SLAVE STATUS")) {
                return rows.next() ? rows.getString(column) : null;
            }
        }

        void kill() throws InterruptedException {
            Process running = process;
            if (running == null || !running.isAlive()) {
                return;
            }
            running.destroyForcibly();
            if (!running.waitFor(10, TimeUnit.SECONDS)) {
                throw new AssertionError("the " + role + " mariadbd survived SIGKILL");
            }
        }

        void destroy() {
            Process running = process;
            if (running != null) {
                running.destroyForcibly();
            }
        }
    }

    private static void deleteRecursively(Path path) {
        if (!Files.exists(path)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(path)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new IllegalStateException("cannot delete " + path, e);
        }
    }
}
