package io.payonce.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;

import io.vertx.core.json.JsonObject;

/**
 * The ten-million-row pass's two halves side by side (scripts/bench-rows.sh): the scenarios against the
 * loaded database beside the same scenarios against an empty one on the same private server, with the ratio
 * of their throughput judged against the target (at least 0.90), each one's latency and its CPU per
 * operation; then what the script says of the data (its load and size). Written to comparison-rows.txt,
 * and printed.
 */
final class RowsComparison {

    /** The loaded database's throughput, at least this share of the empty one's. */
    static final double TARGET = 0.90;

    private RowsComparison() {
    }

    static void write(Path dir, Comparison.Pass empty, Comparison.Pass loaded, Path data) throws IOException {
        if (empty == null || loaded == null) {
            System.err.println("comparison: " + dir.resolve("summary.jsonl") + " does not hold both halves of the"
                    + " ten-million-row pass (lines tagged rows=0 and rows=N)");
            System.exit(1);
        }
        StringBuilder out = new StringBuilder();
        long rows = loaded.machine.getLong("rows", 0L);
        out.append(String.format(Locale.ROOT, "PayOnce benchmark: %,d orders, payments and tokens against an empty"
                + " database, one private MariaDB, one run of scripts/bench.sh (BENCH_ROWS)%n%n", rows));
        out.append(Comparison.machineLine(loaded));
        out.append(String.format(Locale.ROOT, "date      %s, commit %s; the packaged JVM application (%s), the"
                + " driver on the same machine%n", loaded.machine.getString("date"), loaded.machine.getString("commit"),
                loaded.app.getString("java_opts", "")));
        out.append(String.format(Locale.ROOT, "mariadb   %s; the same server for both, the empty database made"
                + " anew for this run; see report-rows-empty.txt and report-rows.txt%n",
                loaded.machine.getString("mariadb")));

        out.append(String.format(Locale.ROOT, "%n  %-18s %4s | %-24s | %-15s | %-15s | %-15s | %-15s | %s%n", "", "",
                "throughput/s", "p50 ms", "p99 ms", "app CPU us/op", "db CPU us/op", "target"));
        out.append(String.format(Locale.ROOT, "  %-18s %4s | %8s %8s %6s | %7s %7s | %7s %7s | %7s %7s | %7s %7s |%n",
                "scenario", "C", "empty", "loaded", "ratio", "empty", "loaded", "empty", "loaded", "empty", "loaded",
                "empty", "loaded"));
        int met = 0;
        int judged = 0;
        for (Map.Entry<String, JsonObject> e : empty.scenarios.entrySet()) {
            JsonObject a = e.getValue();
            JsonObject b = loaded.scenarios.get(e.getKey());
            if (b == null) {
                continue;
            }
            double ratio = Comparison.tput(b) / Comparison.tput(a);
            boolean pass = ratio >= TARGET;
            judged++;
            met += pass ? 1 : 0;
            out.append(String.format(Locale.ROOT,
                    "  %-18s %4s | %8.0f %8.0f %6.2f | %7.2f %7.2f | %7.2f %7.2f | %7.0f %7.0f | %7.0f %7.0f | %s%n",
                    e.getKey().replaceFirst(" C=\\d+$", ""), a.getValue("c"), Comparison.tput(a), Comparison.tput(b),
                    ratio, Comparison.number(a, "p50_ms"), Comparison.number(b, "p50_ms"), Comparison.number(a, "p99_ms"),
                    Comparison.number(b, "p99_ms"), Comparison.microsPerOp(a, "app"), Comparison.microsPerOp(b, "app"),
                    Comparison.microsPerOp(a, "db"), Comparison.microsPerOp(b, "db"), pass ? "PASS" : "MISS"));
        }
        out.append(String.format(Locale.ROOT, "%n  target: the loaded database's throughput at least %.0f %% of the"
                + " empty one's: met in %d of %d scenarios%n", 100 * TARGET, met, judged));
        out.append("  CPU us/op: CPU time (user and kernel) per payment or replay from /proc: app = the application's,"
                + " db = the private MariaDB's (its background work on the loaded data, such as the token purge's"
                + " deletes, included)\n");
        out.append(String.format(Locale.ROOT, "  other processes took at most %.0f%% of a core during the empty half's"
                + " measurements, %.0f%% during the loaded half's%n", empty.worstOther, loaded.worstOther));
        if (data != null && Files.isReadable(data)) {
            out.append('\n').append(Files.readString(data));
        }
        Path file = dir.resolve("comparison-rows.txt");
        Files.writeString(file, out.toString());
        System.out.print(out);
        System.out.println("\nwritten: " + file);
    }
}
