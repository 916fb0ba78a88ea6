package io.payonce.support;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A Redis Cluster of the test's own (never the shared Redis on 6379): three masters with a replica each,
 * Debian's {@code redis-server} on free loopback ports, its files under a directory of its own in
 * {@code target/}, nothing saved to disk, each node's log there too ({@link ServerLogs}, printed when a start
 * or a test fails). A master can be killed ({@code SIGKILL}) and its replica's promotion awaited, hung
 * ({@code SIGSTOP}) and resumed, or replaced by its replica while it stays up; a slot can be moved to
 * another master in two steps, to look at the cluster in the middle of a resharding. {@link #close()}, or
 * the JVM's exit if a test never gets there, kills every node.
 */
public final class RedisCluster implements AutoCloseable {

    private static final String SERVER = "/usr/bin/redis-server";
    private static final String CLI = "/usr/bin/redis-cli";
    private static final int NODES = 6;
    /** Short, so a killed master is replaced within seconds (about 3.5 s here). */
    private static final int NODE_TIMEOUT_MS = 2_000;
    private static final Duration START_BOUND = Duration.ofSeconds(20);
    /** Node timeout, the failure report's spread, the replica's election delay, with room for a loaded machine. */
    private static final Duration FAILOVER_BOUND = Duration.ofSeconds(20);
    private static final Duration CLI_BOUND = Duration.ofSeconds(10);

    /** One redis-server: its client and cluster bus ports, and its process. */
    private record Node(int port, int busPort, Process process) {
    }

    /** A slot on its way from one master to another: its number, and the port and node id of each. */
    public record SlotMove(int slot, int from, String fromId, int to, String toId) {
    }

    private final File dir;
    private final Map<Integer, Node> nodes = new LinkedHashMap<>();
    private final Thread killAtExit = new Thread(this::killAll, "redis-cluster-kill");

    private RedisCluster(File dir) {
        this.dir = dir;
    }

    /**
     * Starts six nodes, forms the cluster, and waits until every node reports it ok and every replica's
     * link to its master is up.
     */
    public static RedisCluster start(String name) throws IOException {
        File dir = new File("target/redis-cluster-" + name + "-" + ProcessHandle.current().pid() + "-"
                + System.nanoTime());
        RedisCluster cluster = new RedisCluster(dir);
        Runtime.getRuntime().addShutdownHook(cluster.killAtExit);
        try {
            cluster.startNodes();
            cluster.form();
            cluster.awaitHealthy(START_BOUND);
            return cluster;
        } catch (IOException | RuntimeException | Error e) {
            ServerLogs.print("the Redis Cluster in " + dir + " did not start: " + e, cluster.logs());
            cluster.close();
            throw e;
        }
    }

    /** The nodes as {@code quarkus.redis.hosts} lists them. */
    public String hosts() {
        return nodes.keySet().stream().map(port -> "redis://127.0.0.1:" + port).collect(Collectors.joining(","));
    }

    /** A node that answers now (a master or a replica), as {@code quarkus.redis.hosts} lists it. */
    public String anyLiveNode() {
        return "redis://127.0.0.1:" + anyLivePort();
    }

    /** The port of the master that serves {@code key}'s hash slot now. */
    public int masterOf(String key) {
        return masterOfSlot(slotOf(key));
    }

    private int slotOf(String key) {
        return Integer.parseInt(cli(anyLivePort(), "CLUSTER", "KEYSLOT", key).trim());
    }

    /**
     * Begins moving {@code key}'s slot to another master, as a resharding does: the other master imports the
     * slot, its master migrates it, and {@code keysMovedNow} (keys of that slot) move at once, the others not
     * until {@link #finishSlotMove}. Meanwhile a command on keys of both sides is answered {@code TRYAGAIN}.
     */
    public SlotMove beginSlotMove(String key, String... keysMovedNow) {
        int slot = slotOf(key);
        int from = masterOfSlot(slot);
        // a node's own ROLE, not another node's gossip: right after a failover the gossip still names the
        // demoted master, which refuses SETSLOT
        int to = liveMasters().stream().mapToInt(RedisCluster::portOf).filter(port -> port != from)
                .filter(this::isMaster).findFirst()
                .orElseThrow(() -> new IllegalStateException("no other master to move slot " + slot + " to"));
        SlotMove move = new SlotMove(slot, from, cli(from, "CLUSTER", "MYID"), to, cli(to, "CLUSTER", "MYID"));
        expectOk(to, "CLUSTER", "SETSLOT", Integer.toString(slot), "IMPORTING", move.fromId());
        expectOk(from, "CLUSTER", "SETSLOT", Integer.toString(slot), "MIGRATING", move.toId());
        migrate(move, List.of(keysMovedNow));
        return move;
    }

    /** Moves the slot's remaining keys, then has the new master, the old one and every other give it to the new. */
    public void finishSlotMove(SlotMove move) {
        String slot = Integer.toString(move.slot());
        migrate(move, cli(move.from(), "CLUSTER", "GETKEYSINSLOT", slot, "1000").lines()
                .filter(line -> !line.isBlank()).toList());
        List<Integer> masters = new ArrayList<>(List.of(move.to(), move.from()));
        // the others by their own ROLE as well: a master demoted by an earlier failover refuses SETSLOT while
        // the gossip still names it a master
        liveMasters().stream().map(RedisCluster::portOf).filter(port -> !masters.contains(port))
                .filter(this::isMaster).forEach(masters::add);
        for (int port : masters) {
            expectOk(port, "CLUSTER", "SETSLOT", slot, "NODE", move.toId());
        }
    }

    private void migrate(SlotMove move, List<String> keys) {
        if (keys.isEmpty()) {
            return;
        }
        List<String> command = new ArrayList<>(List.of("MIGRATE", "127.0.0.1", Integer.toString(move.to()), "", "0",
                "5000", "KEYS"));
        command.addAll(keys);
        expectOk(move.from(), command.toArray(String[]::new));
    }

    /** How many times the node on {@code port} has answered the error {@code code} (say TRYAGAIN), as INFO tells. */
    public long errorsAnswered(int port, String code) {
        String prefix = "errorstat_" + code + ":count=";
        return cli(port, "INFO", "errorstats").lines().filter(line -> line.startsWith(prefix))
                .mapToLong(line -> Long.parseLong(line.substring(prefix.length()).split(",")[0].trim()))
                .findFirst().orElse(0);
    }

    /** The answer of the node on {@code port} to a command, asked directly (no redirection): the reply or the error. */
    public String command(int port, String... args) {
        return cli(port, args);
    }

    /** The value of {@code key} as the node on {@code port} holds it, asked directly (no redirection); "" for none. */
    public String get(int port, String key) {
        return cli(port, "GET", key);
    }

    /**
     * Kills ({@code SIGKILL}) the master serving {@code key}, as a crash would; answers its port. See
     * {@link #awaitFailover}.
     */
    public int killMasterOf(String key) throws InterruptedException {
        int port = masterOf(key);
        Process process = nodes.get(port).process();
        process.destroyForcibly();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            throw new AssertionError("redis-server on " + port + " survived SIGKILL");
        }
        return port;
    }

    /** The port of a master whose replica is up and linked to it, so that it can fail over. */
    public int masterWithReplica() {
        for (String[] master : liveMasters()) {
            if (replicaOf(master[0]) != null) {
                return portOf(master);
            }
        }
        throw new IllegalStateException("no master has a live replica (" + dir + ")");
    }

    /**
     * Has the replica of the master on {@code port} take its place ({@code CLUSTER FAILOVER}, as before a
     * master's maintenance): the old master stays up, as the replica of the new one. Waits until it is a
     * replica and the cluster is healthy again.
     */
    public void failOver(int port) {
        Integer replica = replicaOf(cli(port, "CLUSTER", "MYID"));
        if (replica == null) {
            throw new IllegalStateException("the master on " + port + " has no live replica (" + dir + ")");
        }
        expectOk(replica, "CLUSTER", "FAILOVER");
        Await.until("the master on " + port + " to become the replica of " + replica + " (" + dir + ")",
                FAILOVER_BOUND, () -> cli(port, "INFO", "replication").contains("role:slave")
                        && allOk() && replicasLinked());
    }

    /** The port of a live replica linked to the master of node id {@code masterId}; null when there is none. */
    private Integer replicaOf(String masterId) {
        for (String line : cli(anyLivePort(), "CLUSTER", "NODES").lines().toList()) {
            String[] fields = line.trim().split(" ");
            if (fields.length >= 8 && fields[2].contains("slave") && !fields[2].contains("fail")
                    && fields[3].equals(masterId) && fields[7].equals("connected")) {
                return portOf(fields);
            }
        }
        return null;
    }

    /** How many client connections the node on {@code port} holds, but for replication links and this very ask. */
    public long clientConnections(int port) {
        return cli(port, "CLIENT", "LIST", "TYPE", "normal").lines()
                .filter(line -> !line.isBlank() && !line.contains(" cmd=client|list")).count();
    }

    /**
     * Stops ({@code SIGSTOP}) the master serving {@code key}, as a hung process: its connections stay open, what
     * is written to them waits in its socket buffers, and it answers nothing until {@link #resume}. Resume it
     * within the cluster's node timeout (2 s) or its replica takes over. Answers its port.
     */
    public int hangMasterOf(String key) {
        int port = masterOf(key);
        signal(port, "STOP");
        return port;
    }

    /** Lets the node on {@code port} run again ({@code SIGCONT}) after {@link #hangMasterOf}. */
    public void resume(int port) {
        signal(port, "CONT");
    }

    private void signal(int port, String signal) {
        run(List.of("kill", "-" + signal, Long.toString(nodes.get(port).process().pid())));
    }

    /** Until another node serves {@code key}'s slot than the killed {@code deadPort}, and every live node says ok. */
    public void awaitFailover(String key, int deadPort) {
        Await.until("a replica to take over from the master on " + deadPort + " (" + dir + ")", FAILOVER_BOUND,
                () -> {
                    try {
                        return masterOf(key) != deadPort && allOk();
                    } catch (IllegalStateException noMasterYet) {
                        return false; // the slot's master is failed and no replica promoted yet
                    }
                });
    }

    /** Until every live node reports the cluster ok and every live replica's link to its master up. */
    public void awaitHealthy(Duration bound) {
        Await.until("the Redis Cluster to be ok with every replica linked (" + dir + ")", bound,
                () -> allOk() && replicasLinked());
    }

    /** Kills every node and waits for them; idempotent. */
    @Override
    public void close() {
        killAll();
        try {
            Runtime.getRuntime().removeShutdownHook(killAtExit);
        } catch (IllegalStateException exiting) {
            // the hook is running or has run
        }
    }

    /**
     * Starts every killed node again on its port with its files: it rejoins the cluster, a former master as
     * the replica of the one that took over; then waits until the cluster is healthy again.
     */
    public void restartKilled() throws IOException {
        for (Node node : List.copyOf(nodes.values())) {
            if (!node.process().isAlive()) {
                startNode(node.port(), node.busPort());
            }
        }
        awaitNodesAnswer();
        awaitHealthy(START_BOUND);
    }

    private void startNodes() throws IOException {
        if (!dir.mkdirs()) {
            throw new IOException("cannot create " + dir);
        }
        // the bus port is given, as port + 10000 (the default) may be taken or out of range
        List<Integer> ports = freePorts(2 * NODES);
        for (int i = 0; i < NODES; i++) {
            startNode(ports.get(i), ports.get(NODES + i));
        }
        awaitNodesAnswer();
    }

    private File log(int port) {
        return new File(new File(dir, "node-" + port), "redis.log");
    }

    private List<File> logs() {
        return nodes.keySet().stream().map(this::log).toList();
    }

    private void startNode(int port, int busPort) throws IOException {
        File nodeDir = new File(dir, "node-" + port);
        nodeDir.mkdirs();
        Process process = new ProcessBuilder(SERVER, "--port", Integer.toString(port),
                "--cluster-port", Integer.toString(busPort), "--bind", "127.0.0.1",
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", Integer.toString(NODE_TIMEOUT_MS),
                "--dir", nodeDir.getAbsolutePath(), "--save", "", "--appendonly", "no")
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(ServerLogs.register(log(port))))
                .start();
        nodes.put(port, new Node(port, busPort, process));
    }

    private void awaitNodesAnswer() {
        for (Node node : nodes.values()) {
            Await.until("redis-server on " + node.port() + " to answer PING (" + dir + ")", START_BOUND, () -> {
                if (!node.process().isAlive()) {
                    throw new IllegalStateException("redis-server on " + node.port() + " exited; see " + dir);
                }
                return "PONG".equals(tryCli(node.port(), "PING"));
            });
        }
    }

    private void form() {
        List<String> command = new ArrayList<>(List.of(CLI, "--cluster", "create"));
        nodes.keySet().forEach(port -> command.add("127.0.0.1:" + port));
        command.addAll(List.of("--cluster-replicas", "1", "--cluster-yes"));
        String out = run(command);
        if (!out.contains("[OK] All 16384 slots covered")) {
            throw new IllegalStateException("redis-cli --cluster create failed:\n" + out);
        }
    }

    private boolean allOk() {
        for (Node node : live()) {
            String info = tryCli(node.port(), "CLUSTER", "INFO");
            if (info == null || !info.contains("cluster_state:ok")) {
                return false;
            }
        }
        return true;
    }

    private boolean replicasLinked() {
        for (Node node : live()) {
            String replication = tryCli(node.port(), "INFO", "replication");
            if (replication == null || (replication.contains("role:slave")
                    && !replication.contains("master_link_status:up"))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Reads CLUSTER NODES: a line a node, {@code id host:port@bus flags master ... link-state slots...}, where
     * a master's slots are ranges ({@code 0-5460}) or single slots; one being moved is in brackets.
     */
    private int masterOfSlot(int slot) {
        for (String[] fields : liveMasters()) {
            for (int i = 8; i < fields.length; i++) {
                if (fields[i].startsWith("[")) {
                    continue;
                }
                String[] range = fields[i].split("-");
                int start = Integer.parseInt(range[0]);
                int end = range.length > 1 ? Integer.parseInt(range[1]) : start;
                if (slot >= start && slot <= end) {
                    return portOf(fields);
                }
            }
        }
        throw new IllegalStateException("no live master serves slot " + slot);
    }

    /** What the node on {@code port} says it is, which the others' gossip may not know yet. */
    private boolean isMaster(int port) {
        return cli(port, "ROLE").trim().startsWith("master");
    }

    /** The CLUSTER NODES lines, split into fields, of the masters not marked failed. */
    private List<String[]> liveMasters() {
        return cli(anyLivePort(), "CLUSTER", "NODES").lines().map(line -> line.trim().split(" "))
                .filter(fields -> fields.length >= 8 && fields[2].contains("master") && !fields[2].contains("fail"))
                .toList();
    }

    /** The client port of a CLUSTER NODES line, from its {@code host:port@bus} field. */
    private static int portOf(String[] fields) {
        String address = fields[1].substring(0, fields[1].indexOf('@'));
        return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
    }

    private void expectOk(int port, String... args) {
        String answer = cli(port, args);
        if (!"OK".equals(answer)) {
            throw new IllegalStateException("redis-server on " + port + " answered " + String.join(" ", args)
                    + " with " + answer);
        }
    }

    private int anyLivePort() {
        return live().stream().map(Node::port).filter(port -> tryCli(port, "PING") != null).findFirst()
                .orElseThrow(() -> new IllegalStateException("no node of the cluster answers"));
    }

    private List<Node> live() {
        return nodes.values().stream().filter(n -> n.process().isAlive()).toList();
    }

    private String cli(int port, String... args) {
        String out = tryCli(port, args);
        if (out == null) {
            throw new IllegalStateException("redis-server on " + port + " did not answer " + String.join(" ", args));
        }
        return out;
    }

    /** The command's output, or null when the node did not answer it. */
    private static String tryCli(int port, String... args) {
        List<String> command = new ArrayList<>(List.of(CLI, "-h", "127.0.0.1", "-p", Integer.toString(port)));
        command.addAll(List.of(args));
        try {
            String out = run(command).trim();
            return out.startsWith("Could not connect") || out.startsWith("Error:") ? null : out;
        } catch (IllegalStateException failed) {
            return null;
        }
    }

    private static String run(List<String> command) {
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            process.getOutputStream().close();
            byte[] out = process.getInputStream().readAllBytes();
            if (!process.waitFor(CLI_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException(String.join(" ", command) + " did not end");
            }
            if (process.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", command) + " exited with " + process.exitValue()
                        + ": " + new String(out, StandardCharsets.UTF_8));
            }
            return new String(out, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + command, e);
        }
    }

    private void killAll() {
        for (Node node : nodes.values()) {
            node.process().destroyForcibly();
        }
        for (Node node : nodes.values()) {
            try {
                node.process().waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Distinct free loopback ports, all held open until all are found so none is handed out twice. */
    private static List<Integer> freePorts(int count) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        List<Integer> ports = new ArrayList<>();
        try {
            while (ports.size() < count) {
                ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(socket);
                ports.add(socket.getLocalPort());
            }
            return ports;
        } finally {
            for (ServerSocket socket : held) {
                socket.close();
            }
        }
    }
}
