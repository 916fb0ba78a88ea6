package io.payonce.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

/**
 * What a Galera cluster did for a scenario, from each node's own counters: the write sets the nodes
 * replicated (one per read-write commit, certified on every node), commits that failed certification or were
 * aborted by a replicated one (and ran again in the application), and how long flow control held replication
 * back. Without a cluster there is nothing to read and nothing to report.
 */
final class ClusterCounters implements AutoCloseable {

    /** The counters that are summed over the nodes. */
    private static final List<String> SUMMED = List.of("wsrep_replicated", "wsrep_replicated_bytes",
            "wsrep_local_cert_failures", "wsrep_local_bf_aborts", "wsrep_flow_control_sent");

    private final List<Database> nodes;

    /** One reading of every node's counters. */
    record Reading(List<Map<String, Long>> nodes) {
    }

    /** {@code nodes}: a connection to each node of the cluster; none without a cluster. */
    ClusterCounters(List<Database> nodes) {
        this.nodes = List.copyOf(nodes);
    }

    boolean isCluster() {
        return !nodes.isEmpty();
    }

    Future<Reading> read() {
        List<Map<String, Long>> readings = new ArrayList<>();
        Future<Void> all = Future.succeededFuture();
        for (Database node : nodes) {
            all = all.compose(v -> node.clusterStatus().map(status -> {
                readings.add(status);
                return null;
            }));
        }
        return all.map(v -> new Reading(readings));
    }

    /**
     * The cluster's work between two readings for {@code ops} operations, as the BENCH line's {@code galera}
     * member; null without a cluster.
     */
    JsonObject since(Reading before, Reading after, int ops) {
        if (!isCluster()) {
            return null;
        }
        JsonObject out = new JsonObject();
        for (String counter : SUMMED) {
            long sum = 0;
            for (int i = 0; i < nodes.size(); i++) {
                sum += after.nodes().get(i).getOrDefault(counter, 0L) - before.nodes().get(i).getOrDefault(counter, 0L);
            }
            out.put(counter.substring("wsrep_".length()), sum);
        }
        long pausedNs = 0;
        for (int i = 0; i < nodes.size(); i++) {
            pausedNs = Math.max(pausedNs, after.nodes().get(i).getOrDefault("wsrep_flow_control_paused_ns", 0L)
                    - before.nodes().get(i).getOrDefault("wsrep_flow_control_paused_ns", 0L));
        }
        int done = Math.max(1, ops);
        return out.put("flow_control_paused_ms", Result.round(pausedNs / 1e6, 1))
                .put("write_sets_per_op", Result.round(out.getLong("replicated") / (double) done, 2))
                .put("replicated_bytes_per_op", Result.round(out.getLong("replicated_bytes") / (double) done, 0));
    }

    /** The report's line for {@link #since}'s figures. */
    static String describe(JsonObject galera, String perWhat) {
        return String.format(Locale.ROOT, "Galera: %d write sets replicated, %.2f per %s (%.0f bytes per %s);"
                + " %d certification failures and %d brute-force aborts (each a transaction the application ran"
                + " again);"
                + " flow control: %d pauses asked, replication held for %.1f ms at most on one node",
                galera.getLong("replicated"), galera.getDouble("write_sets_per_op"), perWhat,
                galera.getDouble("replicated_bytes_per_op"), perWhat, galera.getLong("local_cert_failures"),
                galera.getLong("local_bf_aborts"), galera.getLong("flow_control_sent"),
                galera.getDouble("flow_control_paused_ms"));
    }

    @Override
    public void close() {
        nodes.forEach(Database::close);
    }
}
