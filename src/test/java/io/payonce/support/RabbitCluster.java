package io.payonce.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * A three-node RabbitMQ cluster of the tests' own, for tests of what PayOnce does when a broker node dies
 * or its connection to one node is cut, none of which they may do to the shared broker. Its nodes,
 * {@code payonce-c<random>-1@localhost} to {@code -3}, are {@link RabbitNode}s: each with its AMQP
 * listener and distribution port of its own on loopback, its data directory and its logs under
 * {@code target/it-logs/payonce-c<random>-<i>/}; all three under one temporary directory
 * ({@code payonce-c<random>-*} in the system's) with one home whose random Erlang cookie they share and
 * no other node has. Every CLI call runs with that home and {@code -n} one of these nodes, so nothing
 * here can reach {@code rabbit@localhost}. No plugin is enabled; guest may connect, from loopback only.
 * Nodes are numbered 1 to 3, as {@link #node}, {@link #port} and the rest take them.
 *
 * <p>The nodes boot side by side; then nodes 2 and 3 join node 1 ({@code stop_app}, {@code join_cluster},
 * {@code start_app}), and the cluster is formed once {@code cluster_status} names all three running.
 * Each VM runs one scheduler ({@code +S 1}): three nodes share the machine's two cores with the build,
 * and the script's default of no scheduler busy-waiting ({@code +sbwt none}, dirty schedulers' too; the
 * JVM's {@code RABBITMQ_*} variables, which could change it, are not passed on) keeps the three idle nodes
 * at about 2 % of one core together. A start of the cluster costs 35 to 45 CPU-seconds here, the more
 * the busier the machine: 27 to 35 in the three VMs (a boot is about 6; the rest is the application's
 * second start on nodes 2 and 3, and their joins) and 8 to 9 in the eight CLI runs, each an Erlang VM of
 * its own. Measured while other builds kept the two cores loaded (load average 7 to 10), it took 34 to
 * 54 s, and a node's restart 9 to 16 s. So the test classes that need a cluster share one per JVM through
 * {@link #shared}, which a shutdown hook stops; each class makes its own {@link #vhost}. A JVM killed
 * before its hooks run leaves the nodes running: {@code ps aux | grep payonce-c} finds their VMs.
 *
 * <p>A node killed with {@link #kill9} comes back with {@link #start}, on its own data directory: it is
 * still a member of the cluster and of its quorum queues, which catch it up from their logs.
 */
public final class RabbitCluster implements AutoCloseable {

    public static final String HOST = RabbitNode.HOST;
    public static final int SIZE = 3;
    /**
     * Joins and the look at the cluster after a start: a join is a few CLI runs of a second or so each,
     * and a node restarted alone syncs its tables with the running ones within seconds.
     */
    private static final Duration FORM_BOUND = Duration.ofSeconds(60);
    /**
     * A quorum queue member on a restarted node is back once its node has booted, and caught up from the
     * leader's log within a second or two; an election after a member's death takes about as long.
     */
    public static final Duration MEMBERS_BOUND = Duration.ofSeconds(60);
    private static final String ERL_ARGS = "+S 1";
    private static final Pattern RUNNING_NODES = Pattern.compile("\"running_nodes\":\\[([^\\]]*)\\]");
    /** One member's line of {@code rabbitmq-queues quorum_status --formatter json}. */
    private static final Pattern MEMBER = Pattern.compile("\"Node Name\":\"([^\"]+)\",\"Raft State\":\"([^\"]*)\"");

    private static RabbitCluster shared;

    private final Path dir;
    private final List<RabbitNode> nodes;
    /** CLI calls any node may answer (vhosts, queues' status) go to the first node that runs at the time. */
    private final RabbitmqCtl anyNode;
    private Duration lastStart;

    /**
     * What the members of one quorum queue are doing, as {@code rabbitmq-queues quorum_status} saw them:
     * each reachable member's node number and its Raft state ({@code leader}, {@code follower},
     * {@code candidate}, ...); a member on a node that is down is not listed.
     */
    public record QueueMembers(Map<Integer, String> states) {

        /** The members {@code quorum_status}'s output names, by their nodes' numbers in {@code cluster}. */
        private static QueueMembers of(RabbitCluster cluster, String status) {
            Map<Integer, String> states = new TreeMap<>();
            Matcher member = MEMBER.matcher(status);
            while (member.find()) {
                states.put(cluster.number(member.group(1), status), member.group(2));
            }
            if (states.isEmpty()) {
                throw new AssertionError("quorum_status names no member:\n" + status);
            }
            return new QueueMembers(Collections.unmodifiableMap(states));
        }

        /** The node whose member leads, 0 when none does (an election under way, or a majority lost). */
        public int leader() {
            List<Integer> leaders = states.entrySet().stream().filter(e -> e.getValue().equals("leader"))
                    .map(Map.Entry::getKey).toList();
            return leaders.size() == 1 ? leaders.get(0) : 0;
        }

        /** The nodes whose members take part in the queue's replication: the leader and its followers. */
        public Set<Integer> online() {
            return states.entrySet().stream()
                    .filter(e -> e.getValue().equals("leader") || e.getValue().equals("follower"))
                    .map(Map.Entry::getKey).collect(Collectors.toCollection(TreeSet::new));
        }
    }

    private RabbitCluster(Path dir, List<RabbitNode> nodes) {
        this.dir = dir;
        this.nodes = List.copyOf(nodes);
        this.anyNode = nodes.get(0).ctl().following(this::aRunningNode);
    }

    /**
     * The cluster this JVM's tests share, started on the first call and stopped when the JVM exits; all three
     * nodes running and clustered, whatever the class before left them in (a node killed or stopped is
     * started again on its data).
     */
    public static synchronized RabbitCluster shared() throws IOException {
        if (shared == null) {
            RabbitCluster started = start();
            Runtime.getRuntime().addShutdownHook(new Thread(started::close, "rabbit-cluster-stop"));
            shared = started;
        } else {
            shared.bringBack();
        }
        return shared;
    }

    /** A cluster of the caller's own, started and formed; the caller closes it. */
    public static RabbitCluster start() throws IOException {
        String id = "payonce-c" + RabbitVhost.random(6);
        Path dir = Files.createTempDirectory(id + "-");
        try {
            Path home = RabbitNode.home(dir);
            List<RabbitNode> nodes = new ArrayList<>();
            for (int i = 1; i <= SIZE; i++) {
                Path nodeDir = Files.createDirectory(dir.resolve("node" + i));
                nodes.add(RabbitNode.configure(id + "-" + i + "@localhost", nodeDir, home, ERL_ARGS));
            }
            RabbitCluster cluster = new RabbitCluster(dir, nodes);
            try {
                cluster.form();
            } catch (RuntimeException | Error e) {
                cluster.close();
                throw e;
            }
            return cluster;
        } catch (IOException | RuntimeException | Error e) {
            RabbitNode.deleteTree(dir);
            throw e;
        }
    }

    /**
     * The AMQP listeners of all three nodes, {@code 127.0.0.1:<port>,...} in node order: the form of the
     * connector's {@code rabbitmq-addresses} and of the client's {@code Address.parseAddresses}.
     */
    public String addresses() {
        return nodes.stream().map(node -> HOST + ":" + node.port()).collect(Collectors.joining(","));
    }

    /** Node {@code i}'s AMQP port: the same across every kill and start. */
    public int port(int i) {
        return node(i, "port").port();
    }

    /** Node {@code i}'s Erlang node name, {@code payonce-c<random>-<i>@localhost}. */
    public String node(int i) {
        return node(i, "node").name();
    }

    /** Whether node {@code i}'s VM runs. */
    public boolean running(int i) {
        return node(i, "running").running();
    }

    /** The nodes node {@code i}'s {@code cluster_status} names as running; empty if it cannot tell now. */
    public Set<String> runningNodes(int i) {
        return runningNodes(node(i, "runningNodes"));
    }

    /** How long the last start of the whole cluster took, from spawning its nodes to its being formed. */
    public synchronized Duration lastStart() {
        return lastStart;
    }

    /**
     * A fresh vhost for {@code testClass} on the cluster (vhosts are cluster-wide), guest and users it makes
     * given every permission; its {@link RabbitVhost#properties} carry {@link #addresses}.
     */
    public RabbitVhost vhost(Class<?> testClass) {
        return RabbitVhost.on(anyNode, HOST, port(1), addresses(), testClass);
    }

    /** Runs {@code rabbitmqctl -n <node i>} with {@code args}, bounded; fails unless it exited 0. */
    public String ctl(int i, String... args) {
        return node(i, "ctl").ctl().run(args);
    }

    /**
     * Kills node {@code i}'s Erlang VM itself with SIGKILL, and returns once it and the script that started
     * it are gone (the VM's helper processes are killed too): its peers see its connections drop, as when
     * its machine dies. {@link #start} brings it back.
     */
    public void kill9(int i) {
        node(i, "kill9").kill9();
    }

    /**
     * Starts node {@code i} again on its data directory, and returns once it has booted and rejoined: its
     * own {@code cluster_status} names it and every other node that runs as running.
     */
    public synchronized void start(int i) {
        node(i, "start").start();
        awaitClustered(node(i, "start"));
    }

    /**
     * The node that leads quorum queue {@code queue} of {@code vhost}, by its members' own Raft states; 0 when
     * none does (an election under way). Fails if the queue is not a quorum queue of that vhost.
     */
    public int leaderOf(String vhost, String queue) {
        return members(vhost, queue).leader();
    }

    /** What quorum queue {@code queue}'s members do now, asked of a running node; fails if it cannot tell. */
    public QueueMembers members(String vhost, String queue) {
        return QueueMembers.of(this, anyNode.queues().run(quorumStatus(vhost, queue)));
    }

    /**
     * Waits, bounded by {@link #MEMBERS_BOUND}, until quorum queue {@code queue} has a leader and {@code n}
     * members taking part (the leader among them), and answers them. A status the cluster cannot give for
     * the moment (its node just lost a peer) counts as not yet.
     */
    public QueueMembers awaitMembers(String vhost, String queue, int n) {
        String[] args = quorumStatus(vhost, queue);
        RabbitmqCtl.Outcome last = Await.until("quorum queue " + queue + " of " + vhost + " to have a leader and "
                + n + " members online", MEMBERS_BOUND, () -> anyNode.queues().attempt(args), status -> {
                    if (!status.ok()) {
                        return false;
                    }
                    QueueMembers members = QueueMembers.of(this, status.output());
                    return members.leader() != 0 && members.online().size() == n;
                });
        return QueueMembers.of(this, last.output());
    }

    private static String[] quorumStatus(String vhost, String queue) {
        return new String[] {"quorum_status", "--vhost", vhost, queue, "--formatter", "json"};
    }

    /** Node {@code i}'s Erlang VM, while it runs: for a test that makes sure a kill took the VM itself. */
    Optional<ProcessHandle> vm(int i) {
        return node(i, "vm").vm();
    }

    /** Stops the three nodes, and deletes their data and configuration; their logs stay in {@link ServerLogs#DIR}. */
    @Override
    public synchronized void close() {
        try {
            List<Throwable> failures = new ArrayList<>();
            // the joined nodes first, node 1 last: each stop is a node leaving a running cluster
            for (RabbitNode node : nodes.reversed()) {
                try {
                    node.stop();
                } catch (RuntimeException | Error e) {
                    failures.add(e);
                }
            }
            if (!failures.isEmpty()) {
                AssertionError failed = new AssertionError("stopping the cluster's nodes failed");
                failures.forEach(failed::addSuppressed);
                throw failed;
            }
        } finally {
            RabbitNode.deleteTree(dir);
            synchronized (RabbitCluster.class) {
                if (shared == this) {
                    shared = null;
                }
            }
        }
    }

    /** Boots the three nodes side by side, joins nodes 2 and 3 to node 1, and waits for all three to run. */
    private synchronized void form() {
        long started = System.nanoTime();
        nodes.forEach(RabbitNode::spawn);
        RabbitNode first = nodes.get(0);
        first.awaitStarted();
        for (RabbitNode node : nodes.subList(1, SIZE)) {
            // no await_startup (a CLI run, a second of CPU) for a boot stop_app ends anyway, once finished
            node.awaitListening();
            node.stopApp();
            node.ctl().run("join_cluster", first.name());
            node.startApp();
        }
        awaitClustered(first);
        lastStart = Duration.ofNanos(System.nanoTime() - started);
    }

    /**
     * Brings back what a test class left down: nodes not running are booted side by side (one restarted
     * while all were down waits in its boot for the others), an application stopped is started. A cluster
     * whose nodes all run is left as it is, without a CLI run (about a second each).
     */
    private synchronized void bringBack() {
        List<RabbitNode> down = nodes.stream().filter(node -> !node.running()).toList();
        List<RabbitNode> stopped = nodes.stream().filter(node -> node.running() && !node.appRunning()).toList();
        if (down.isEmpty() && stopped.isEmpty()) {
            return;
        }
        down.forEach(RabbitNode::spawn);
        down.forEach(RabbitNode::awaitStarted);
        stopped.forEach(RabbitNode::startApp);
        awaitClustered(nodes.get(0));
    }

    /** Until {@code asked}'s {@code cluster_status} names every node whose VM runs as running. */
    private void awaitClustered(RabbitNode asked) {
        Set<String> expected = nodes.stream().filter(RabbitNode::running).map(RabbitNode::name)
                .collect(Collectors.toCollection(TreeSet::new));
        Await.until(asked.name() + "'s cluster_status to name " + expected + " as running", FORM_BOUND,
                () -> runningNodes(asked), expected::equals);
    }

    /** The nodes {@code asked}'s {@code cluster_status} names as running; empty if it cannot tell now. */
    private static Set<String> runningNodes(RabbitNode asked) {
        RabbitmqCtl.Outcome status = asked.ctl().attempt("-s", "cluster_status", "--formatter", "json");
        Matcher running = RUNNING_NODES.matcher(status.output());
        if (!status.ok() || !running.find()) {
            return Set.of();
        }
        return Arrays.stream(running.group(1).split(",")).map(name -> name.strip().replace("\"", ""))
                .filter(name -> !name.isEmpty()).collect(Collectors.toCollection(TreeSet::new));
    }

    /** The first node whose VM runs, for calls any node of the cluster may answer. */
    private String aRunningNode() {
        return nodes.stream().filter(RabbitNode::running).map(RabbitNode::name).findFirst()
                .orElseThrow(() -> new AssertionError("no node of the cluster runs: " + names()));
    }

    private RabbitNode node(int i, String what) {
        if (i < 1 || i > SIZE) {
            throw new IllegalArgumentException(what + ": nodes are numbered 1 to " + SIZE + ", not " + i);
        }
        return nodes.get(i - 1);
    }

    /** Node {@code name}'s number, as a member's name in {@code context} gives it. */
    private int number(String name, String context) {
        return IntStream.rangeClosed(1, SIZE).filter(i -> nodes.get(i - 1).name().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("member " + name + " is no node of the cluster "
                        + names() + ":\n" + context));
    }

    private List<String> names() {
        return nodes.stream().map(RabbitNode::name).toList();
    }
}
