package io.payonce.support;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A three-node MariaDB Galera cluster of the test's own on loopback, never the shared server: each node a
 * {@code mariadbd} with its own data directory under {@code target/galera/<name>/node<i>} (see
 * {@link #freshBase} for a checkout the server's user cannot enter), its own ports
 * for SQL, group communication (gcomm), incremental (IST) and full state transfer (SST, by rsync), and
 * its logs under {@code target/it-logs} ({@link ServerLogs}, printed when a start or a test fails). Node 1
 * bootstraps the cluster, nodes 2 and 3 join it by SST;
 * {@link #start} returns once all three are {@code Synced} in a cluster of three, with the database
 * {@link #DATABASE} created. A node can be killed ({@code kill -9}) and started again, as a supervisor
 * would: its position recovered from InnoDB first ({@code --wsrep-recover}), so it catches up by IST.
 *
 * <p>Nodes are numbered 1 to 3. Reads through {@link #count} and {@link #value} are causal
 * ({@code wsrep_sync_wait}): they see every transaction the cluster committed before they were sent,
 * whichever node committed it.
 *
 * <p>{@link #main} keeps a cluster for a script (scripts/bench.sh) until the script lets go of it.
 */
public final class GaleraCluster implements AutoCloseable {

    public static final int NODES = 3;
    public static final String DATABASE = "payonce";

    private static final String MARIADBD = "/usr/sbin/mariadbd";
    private static final String INSTALL_DB = "/usr/bin/mariadb-install-db";
    private static final String PROVIDER = "/usr/lib/galera/libgalera_smm.so";
    private static final String RSYNC = "/usr/bin/rsync";
    private static final String RUNUSER = "/usr/sbin/runuser";
    /** Bootstrap is under a second; a join by SST a few, longer on a machine busy with other builds. */
    private static final Duration SYNC_BOUND = Duration.ofSeconds(90);
    /** A recovery reads InnoDB's redo log and stops: seconds, like an install. */
    private static final Duration RECOVER_BOUND = MariaDbInstall.BOUND;
    private static final Pattern RECOVERED = Pattern.compile("WSREP: Recovered position: *(\\S+:-?\\d+)");

    private final String name;
    /** The build directory of the checkout, {@code target}, under which the cluster's files are found. */
    private final File build;
    private File base;
    private final List<Node> nodes = new ArrayList<>();
    private final List<String> options = new ArrayList<>();
    /** Every log this cluster's processes wrote, oldest first. */
    private final List<File> logs = new ArrayList<>();
    private final Thread killAll = new Thread(this::killEveryNode, "galera-kill-all");

    private static final class Node {
        final int index;
        final int sqlPort;
        final int gcommPort;
        final int istPort;
        final int sstPort;
        final File dir;
        Process process;
        int starts;

        Node(int index, File dir) throws IOException {
            this.index = index;
            this.dir = dir;
            this.sqlPort = LoopbackPorts.take();
            this.gcommPort = LoopbackPorts.take();
            this.istPort = LoopbackPorts.take();
            this.sstPort = LoopbackPorts.take();
        }

        File config() {
            return new File(dir, "my.cnf");
        }

        File data() {
            return new File(dir, "data");
        }

        String label() {
            return "node " + index + " (SQL port " + sqlPort + ")";
        }
    }

    private GaleraCluster(String name, File build) {
        this.name = name;
        this.build = build.getAbsoluteFile();
    }

    /** A cluster whose directories and logs are named after {@code name}; not started yet. */
    public static GaleraCluster named(String name) {
        return new GaleraCluster(name, new File("target"));
    }

    /** A cluster whose files are found under {@code build}/galera rather than this checkout's target/galera. */
    static GaleraCluster under(File build, String name) {
        return new GaleraCluster(name, build);
    }

    /**
     * A server option for every node, {@code name=value} as in my.cnf, written after this class's own so
     * that it overrides one of them; before {@link #start}.
     */
    public GaleraCluster option(String nameAndValue) {
        if (!nodes.isEmpty()) {
            throw new IllegalStateException("options are written when the cluster starts; it has started");
        }
        options.add(nameAndValue);
        return this;
    }

    /** What this machine lacks to run a cluster, or null (scripts/services.sh --test-tools installs it all). */
    public static String missingTools() {
        for (String tool : List.of(MARIADBD, INSTALL_DB, PROVIDER, RSYNC, "/usr/bin/wsrep_sst_rsync")) {
            if (!new File(tool).exists()) {
                return tool + " is missing (scripts/services.sh --test-tools installs galera-4 and rsync)";
            }
        }
        return null;
    }

    /**
     * Makes three fresh data directories, bootstraps node 1, starts nodes 2 and 3 together, and waits until
     * each is Synced in a cluster of three; then creates {@link #DATABASE}. Answers how long that took.
     */
    public Duration start() throws IOException, InterruptedException, SQLException {
        long started = System.nanoTime();
        Runtime.getRuntime().addShutdownHook(killAll);
        try {
            installNodes();
            bootstrapAndJoin();
        } catch (IOException | InterruptedException | SQLException | RuntimeException | Error e) {
            ServerLogs.print("the Galera cluster " + name + " did not start: " + e, logs);
            throw e;
        }
        return Duration.ofNanos(System.nanoTime() - started);
    }

    /** Three fresh data directories, each with its configuration and system tables; nothing started. */
    void installNodes() throws IOException, InterruptedException {
        base = freshBase();
        for (int i = 1; i <= NODES; i++) {
            nodes.add(new Node(i, new File(base, "node" + i)));
        }
        for (Node node : nodes) {
            install(node);
        }
    }

    private void bootstrapAndJoin() throws IOException, InterruptedException, SQLException {
        launch(node(1), List.of("--wsrep-new-cluster"));
        awaitSynced(node(1), 1);
        // the joiners are given their state one after the other by node 1; started together, they queue for it
        launch(node(2), List.of());
        launch(node(3), List.of());
        for (Node node : nodes) {
            awaitSynced(node, NODES);
        }
        try (Connection c = connect(1, ""); Statement s = c.createStatement()) {
            // replicated in total order: every node creates it before it applies anything written after it
            s.execute("CREATE DATABASE " + DATABASE);
        }
    }

    public int port(int node) {
        return node(node).sqlPort;
    }

    /** The URL of {@code QUARKUS_DATASOURCE_REACTIVE_URL} for an instance on {@code node}. */
    public String reactiveUrl(int node) {
        return "mysql://127.0.0.1:" + port(node) + "/" + DATABASE;
    }

    /** The URL of {@code QUARKUS_DATASOURCE_JDBC_URL} (Flyway) for an instance on {@code node}. */
    public String jdbcUrl(int node) {
        return "jdbc:mariadb://127.0.0.1:" + port(node) + "/" + DATABASE;
    }

    public boolean isRunning(int node) {
        Process process = node(node).process;
        return process != null && process.isAlive();
    }

    /**
     * SIGKILL of the node's {@code mariadbd}: no shutdown, its clients' connections reset. The others go on
     * without it once group communication has declared it gone (up to {@code evs.suspect_timeout}, 5 s).
     */
    public void kill(int node) throws InterruptedException {
        Node n = node(node);
        if (n.process == null || !n.process.isAlive()) {
            return;
        }
        // an SST or IST under way has helpers (wsrep_sst_rsync, rsync) that would outlive it
        List<ProcessHandle> helpers = n.process.descendants().toList();
        n.process.destroyForcibly();
        helpers.forEach(ProcessHandle::destroyForcibly);
        if (!n.process.waitFor(10, TimeUnit.SECONDS)) {
            throw new AssertionError(n.label() + " survived SIGKILL");
        }
    }

    /**
     * Starts a node that was killed, as a supervisor does: recovers its last committed position from InnoDB,
     * then rejoins with it, so the cluster sends only what it missed (IST; a full SST when the donor's cache
     * no longer holds that). Returns once it is Synced in a cluster of three; answers how long that took.
     */
    public Duration restart(int node) throws IOException, InterruptedException {
        Node n = node(node);
        if (n.process != null && n.process.isAlive()) {
            throw new IllegalStateException(n.label() + " is running");
        }
        long started = System.nanoTime();
        String position = recoverPosition(n);
        launch(n, position == null ? List.of() : List.of("--wsrep-start-position=" + position));
        awaitSynced(n, NODES);
        return Duration.ofNanos(System.nanoTime() - started);
    }

    /** Waits until every node runs Synced in a cluster of three, starting again any that is not running. */
    public void awaitAllSynced() throws IOException, InterruptedException {
        for (Node n : nodes) {
            if (!isRunning(n.index)) {
                restart(n.index);
            }
        }
        for (Node n : nodes) {
            awaitSynced(n, NODES);
        }
    }

    /** A global status variable of the node, such as {@code wsrep_local_state_comment}; null when it has none. */
    public String status(int node, String variable) throws SQLException {
        try (Connection c = connect(node, "");
                PreparedStatement s = c.prepareStatement(
                        "SELECT variable_value FROM information_schema.global_status WHERE variable_name = ?")) {
            s.setQueryTimeout(5);
            s.setString(1, variable);
            try (ResultSet rows = s.executeQuery()) {
                return rows.next() ? rows.getString(1) : null;
            }
        }
    }

    /** A numeric global status counter of the node, such as {@code wsrep_local_cert_failures}. */
    public long counter(int node, String variable) {
        try {
            String value = status(node, variable);
            return value == null ? 0 : Long.parseLong(value);
        } catch (SQLException e) {
            throw new AssertionError("reading " + variable + " on " + node(node).label() + " failed: " + e, e);
        }
    }

    /** The number a {@code SELECT COUNT(*) ...} in {@link #DATABASE} answers on {@code node}, read causally. */
    public long count(int node, String sql, Object... args) {
        String value = value(node, sql, args);
        return value == null ? 0 : Long.parseLong(value);
    }

    /** The first column of the first row of {@code sql} in {@link #DATABASE} on {@code node}, read causally; null when no row. */
    public String value(int node, String sql, Object... args) {
        try (Connection c = connect(node, DATABASE)) {
            try (Statement s = c.createStatement()) {
                // wait until this node has applied every write set the cluster had ordered when the read was sent
                s.execute("SET SESSION wsrep_sync_wait = 1");
            }
            try (PreparedStatement s = c.prepareStatement(sql)) {
                s.setQueryTimeout(10);
                for (int i = 0; i < args.length; i++) {
                    s.setObject(i + 1, args[i]);
                }
                try (ResultSet rows = s.executeQuery()) {
                    return rows.next() ? rows.getString(1) : null;
                }
            }
        } catch (SQLException e) {
            throw new AssertionError("reading " + node(node).label() + " failed: " + e, e);
        }
    }

    /** Deletes the nodes' files, and the link to them if they are not under the build directory; not the logs. */
    void deleteFiles() throws IOException {
        deleteRecursively(new File(new File(build, "galera"), name).toPath());
        if (base != null) {
            deleteRecursively(base.toPath());
        }
    }

    /** Kills every node; the data directories and logs stay for a look after a failure. */
    @Override
    public void close() {
        killEveryNode();
        try {
            Runtime.getRuntime().removeShutdownHook(killAll);
        } catch (IllegalStateException | IllegalArgumentException exitingOrNeverAdded) {
            // the hook runs, or was never added
        }
    }

    /**
     * {@code GaleraCluster NAME MAX_SECONDS [OPTION=VALUE ...]}: starts a cluster named {@code NAME} with
     * these server options, prints {@code node I port SQL_PORT pid PID} for each node and then
     * {@code ready in MS ms}, and kills every node when its standard input ends (the script holding it
     * closed it, or exited however it exited), on SIGTERM, or after {@code MAX_SECONDS}, whichever comes
     * first. Exits 3 when the machine lacks what a cluster needs.
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: GaleraCluster NAME MAX_SECONDS [OPTION=VALUE ...]");
            System.exit(2);
        }
        String missing = missingTools();
        if (missing != null) {
            System.err.println("galera: " + missing);
            System.exit(3);
        }
        long maxSeconds = Long.parseLong(args[1]);
        GaleraCluster cluster = named(args[0]);
        for (int i = 2; i < args.length; i++) {
            cluster.option(args[i]);
        }
        Thread bound = new Thread(() -> {
            try {
                Thread.sleep(TimeUnit.SECONDS.toMillis(maxSeconds));
            } catch (InterruptedException stopped) {
                return;
            }
            System.err.println("galera: stopping after " + maxSeconds + " s, the bound it was given");
            // the shutdown hook start() added kills every node, as it does on SIGTERM
            System.exit(4);
        }, "galera-bound");
        bound.setDaemon(true);
        bound.start();
        try {
            Duration took = cluster.start();
            for (Node n : cluster.nodes) {
                System.out.println("node " + n.index + " port " + n.sqlPort + " pid " + n.process.pid());
            }
            System.out.println("ready in " + took.toMillis() + " ms");
            System.out.flush();
            while (System.in.read() >= 0) {
                // nothing is said on it: it is held open for as long as the cluster is wanted
            }
        } finally {
            cluster.close();
        }
    }

    private void killEveryNode() {
        for (Node n : nodes) {
            if (n.process != null) {
                n.process.descendants().forEach(ProcessHandle::destroyForcibly);
                n.process.destroyForcibly();
            }
        }
        for (Node n : nodes) {
            if (n.process != null) {
                try {
                    n.process.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private Node node(int index) {
        if (index < 1 || index > nodes.size()) {
            throw new IllegalArgumentException("no node " + index + " (nodes are 1 to " + NODES + ")");
        }
        return nodes.get(index - 1);
    }

    /**
     * An empty directory for the nodes' files, which the server's user can enter: {@code target/galera/<name>}
     * when it can enter {@code target/galera}; else (a checkout it cannot enter: under /root, in a
     * {@code mktemp -d} directory, or made under umask 077) one under the system's temporary directory,
     * named after the checkout, to which {@code target/galera/<name>} is a link. Its logs stay in
     * {@link ServerLogs#DIR} either way: the test's process writes them.
     */
    private File freshBase() throws IOException, InterruptedException {
        File galera = new File(build, "galera");
        Files.createDirectories(galera.toPath());
        openToServerUser(galera);
        File inTarget = new File(galera, name);
        deleteRecursively(inTarget.toPath()); // an earlier run's link goes, not what it points to
        File fresh = inTarget;
        if (!serverUserCanEnter(galera)) {
            File outside = new File(System.getProperty("java.io.tmpdir"),
                    "payonce-galera-" + Integer.toHexString(galera.getPath().hashCode()));
            Files.createDirectories(outside.toPath());
            openToServerUser(outside);
            if (!serverUserCanEnter(outside)) {
                throw new IllegalStateException(serverUser() + " can enter neither " + galera + " nor " + outside
                        + ", where the nodes' data directories would be");
            }
            fresh = new File(outside, name);
            deleteRecursively(fresh.toPath());
            Files.createSymbolicLink(inTarget.toPath(), fresh.toPath());
        }
        Files.createDirectories(fresh.toPath());
        openToServerUser(fresh);
        return fresh;
    }

    /** The node's configuration file and a fresh data directory with the system tables, its own user's. */
    private void install(Node node) throws IOException, InterruptedException {
        Files.createDirectories(node.dir.toPath());
        Files.writeString(node.config().toPath(), config(node), StandardCharsets.UTF_8);
        File tmp = new File(node.dir, "install-tmp");
        Files.createDirectories(tmp.toPath());
        // its SST script reads the configuration as that user, whatever the umask made of its mode
        chown(node.dir);
        // without the node's options: the bootstrap it runs must not load the provider
        MariaDbInstall.start(node.label() + " of " + name, node.data(), tmp, serverUser(), log(node, "install"),
                List.of()).await();
        chown(node.dir);
    }

    /** A log of the node's, {@code galera-<name>-node<i>-<what>.log} in {@link ServerLogs#DIR}, registered. */
    private File log(Node node, String what) {
        File log = ServerLogs.named("galera-" + name + "-node" + node.index + "-" + what + ".log");
        synchronized (logs) {
            logs.add(log);
        }
        return log;
    }

    /**
     * The node's options. Run as root, the server switches to {@code mysql}: the rsync daemon that receives
     * an SST drops root for {@code nobody}, which could not write a root-owned data directory.
     */
    private String config(Node node) {
        String peers = String.join(",", nodes.stream().map(n -> "127.0.0.1:" + n.gcommPort).toList());
        String dir = node.dir.getAbsolutePath();
        List<String> lines = new ArrayList<>(List.of(
                "[mariadbd]",
                "user=" + serverUser(),
                "datadir=" + node.data().getAbsolutePath(),
                "socket=" + dir + "/mariadbd.sock",
                "pid-file=" + dir + "/mariadbd.pid",
                "port=" + node.sqlPort,
                "bind-address=127.0.0.1",
                "skip-name-resolve",
                // small: the machine runs the service, its tests and other builds beside three servers
                "innodb_buffer_pool_size=32M",
                "innodb_log_file_size=16M",
                // a node dies by SIGKILL here, never with its machine: a commit written to the OS survives that
                "innodb_flush_log_at_trx_commit=2",
                "max_connections=200",
                // what Galera requires: row-based write sets, InnoDB only, no table-level auto-increment lock
                "binlog_format=ROW",
                "default_storage_engine=InnoDB",
                "innodb_autoinc_lock_mode=2",
                "wsrep_on=ON",
                "wsrep_provider=" + PROVIDER,
                "wsrep_cluster_name=payonce_" + name,
                "wsrep_cluster_address=gcomm://" + peers,
                "wsrep_node_name=node" + node.index,
                "wsrep_node_address=127.0.0.1:" + node.gcommPort,
                "wsrep_node_incoming_address=127.0.0.1:" + node.sqlPort,
                "wsrep_provider_options=\"gmcast.listen_addr=tcp://127.0.0.1:" + node.gcommPort
                        + ";ist.recv_addr=127.0.0.1:" + node.istPort + ";gcache.size=64M\"",
                "wsrep_sst_method=rsync",
                "wsrep_sst_receive_address=127.0.0.1:" + node.sstPort));
        lines.addAll(options);
        return String.join("\n", lines) + "\n";
    }

    /** Starts the node's server; with no log-error option it logs to stderr, which goes to its log file. */
    private void launch(Node node, List<String> extra) throws IOException {
        List<String> command = new ArrayList<>(List.of(MARIADBD, "--defaults-file=" + node.config().getAbsolutePath()));
        command.addAll(extra);
        File log = log(node, Integer.toString(++node.starts));
        node.process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log).start();
    }

    /** The node's last committed position as InnoDB holds it, or null when recovery could not tell. */
    private String recoverPosition(Node node) throws IOException, InterruptedException {
        File log = log(node, "recover-" + (node.starts + 1));
        Process recover = new ProcessBuilder(MARIADBD, "--defaults-file=" + node.config().getAbsolutePath(),
                "--wsrep-recover").redirectErrorStream(true).redirectOutput(log).start();
        if (!recover.waitFor(RECOVER_BOUND.toSeconds(), TimeUnit.SECONDS)) {
            recover.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            return null;
        }
        Matcher found = RECOVERED.matcher(Files.readString(log.toPath(), StandardCharsets.ISO_8859_1));
        String position = null;
        while (found.find()) {
            position = found.group(1);
        }
        return position;
    }

    /** Until the node is Synced and sees a cluster of {@code size}; fails naming its log. */
    private void awaitSynced(Node node, int size) {
        String what = node.label() + " of " + name + " to be Synced in a cluster of " + size + " (see "
                + ServerLogs.DIR.getPath() + "/galera-" + name + "-node" + node.index + "-" + node.starts + ".log)";
        Await.until(what, SYNC_BOUND, () -> {
            if (!node.process.isAlive()) {
                throw new AssertionError(node.label() + " exited with " + node.process.exitValue() + " while waiting for "
                        + what);
            }
            try {
                return "Synced".equals(status(node.index, "wsrep_local_state_comment"))
                        && String.valueOf(size).equals(status(node.index, "wsrep_cluster_size"));
            } catch (SQLException notYet) {
                return false; // not listening yet, or still joining
            }
        });
    }

    private Connection connect(int node, String database) throws SQLException {
        return DriverManager.getConnection("jdbc:mariadb://127.0.0.1:" + port(node) + "/" + database
                + "?connectTimeout=2000&socketTimeout=15000", "root", "");
    }

    /** The user mariadbd runs as: {@code mysql} when the tests run as root, else whoever runs them. */
    private static String serverUser() {
        return "root".equals(System.getProperty("user.name")) ? "mysql" : System.getProperty("user.name");
    }

    /** Whether the server's user can enter {@code dir}: every directory on its path lets it search. */
    private static boolean serverUserCanEnter(File dir) throws IOException, InterruptedException {
        if (!"root".equals(System.getProperty("user.name"))) {
            return true; // the server runs as whoever runs the tests, who got here
        }
        Process test = new ProcessBuilder(RUNUSER, "-u", serverUser(), "--", "test", "-x", dir.getAbsolutePath())
                .redirectErrorStream(true).start();
        if (!test.waitFor(30, TimeUnit.SECONDS)) {
            test.destroyForcibly();
            throw new IOException(RUNUSER + " -u " + serverUser() + " test -x " + dir + " did not end");
        }
        return test.exitValue() == 0;
    }

    /** rwxr-xr-x on a directory of this class's own, which a umask such as 077 would have closed. */
    private static void openToServerUser(File dir) throws IOException {
        Files.setPosixFilePermissions(dir.toPath(), PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    private static void chown(File dir) throws IOException, InterruptedException {
        if (!"root".equals(System.getProperty("user.name"))) {
            return;
        }
        Process chown = new ProcessBuilder("chown", "-R", "mysql:mysql", dir.getAbsolutePath())
                .redirectErrorStream(true).start();
        if (!chown.waitFor(30, TimeUnit.SECONDS) || chown.exitValue() != 0) {
            throw new IOException("chown -R mysql:mysql " + dir + " failed: "
                    + new String(chown.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    private static void deleteRecursively(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
