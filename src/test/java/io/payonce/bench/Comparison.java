package io.payonce.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.vertx.core.json.JsonObject;

/**
 * Two passes of one run side by side, from the lines they wrote to summary.jsonl: {@code native}, the JVM
 * application and the native executable (start-up, memory, and each scenario both ran), into comparison.txt;
 * {@code galera}, one instance on one server and two on a three-node Galera cluster (the database's limit, and
 * each scenario's throughput, latency and cost per operation: CPU, commits, certification), into
 * comparison-galera.txt. Prints what it writes; scripts/bench.sh runs it after the native and the Galera pass.
 */
public final class Comparison {

    private Comparison() {
    }

    /**
     * {@code DIR [native|galera|rows [DATA]]}: the folder of summary.jsonl, and which pass to set beside the JVM
     * pass; for {@code rows}, the loaded database's pass beside the empty one's, and a file describing the data
     * (its load, its size) to add.
     */
    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args.length > 0 ? args[0] : "src/bench");
        boolean galera = args.length > 1 && args[1].equals("galera");
        Map<String, Pass> passes = new LinkedHashMap<>();
        for (String line : Files.readAllLines(dir.resolve("summary.jsonl"))) {
            JsonObject j = line.isBlank() ? null : new JsonObject(line);
            // the external pass's lines have a comparison of their own (ExternalPass)
            if (j != null && j.getString("channel", "sandbox").equals("sandbox")) {
                passes.computeIfAbsent(j.getString("runtime", "jvm") + " " + j.getString("deployment", "single")
                        + (j.containsKey("rows") ? " rows=" + (j.getLong("rows") == 0 ? "0" : "n") : ""),
                        r -> new Pass()).add(j);
            }
        }
        if (args.length > 1 && args[1].equals("rows")) {
            RowsComparison.write(dir, passes.get("jvm single rows=0"), passes.get("jvm single rows=n"),
                    args.length > 2 ? Path.of(args[2]) : null);
            return;
        }
        Pass jvm = passes.get("jvm single");
        Pass other = passes.get(galera ? "jvm galera-2" : "native single");
        if (jvm == null || other == null) {
            System.err.println("comparison: " + dir.resolve("summary.jsonl") + " does not hold both a jvm pass on one"
                    + " server and " + (galera ? "a pass on the Galera cluster" : "a native pass"));
            System.exit(1);
        }
        String text = galera ? galeraText(jvm, other) : text(jvm, other);
        Path file = dir.resolve(galera ? "comparison-galera.txt" : "comparison.txt");
        Files.writeString(file, text);
        System.out.print(text);
        System.out.println("\nwritten: " + file);
    }

    /** One pass's lines: its machine and application facts and its measured scenarios, by label. */
    static final class Pass {
        JsonObject machine = new JsonObject();
        JsonObject app = new JsonObject();
        /** Each instance's start-up and memory: one line, or one per instance. */
        final List<JsonObject> apps = new ArrayList<>();
        final Map<String, JsonObject> scenarios = new LinkedHashMap<>();
        final List<String> limits = new ArrayList<>();
        final Map<Integer, JsonObject> dbLimits = new LinkedHashMap<>();
        double worstOther;

        void add(JsonObject j) {
            String scenario = j.getString("scenario", "");
            switch (scenario) {
                case "machine" -> machine = j;
                case "app" -> {
                    app = j;
                    apps.add(j);
                }
                case "limit_redis", "limit_db" -> {
                    limits.add(scenario + " C=" + j.getInteger("c"));
                    if (scenario.equals("limit_db")) {
                        dbLimits.put(j.getInteger("c"), j);
                    }
                }
                default -> scenarios.put(label(j), j);
            }
            JsonObject cpu = j.getJsonObject("cpu_pct");
            if (cpu != null) {
                worstOther = Math.max(worstOther, cpu.getDouble("other", 0.0));
            }
        }
    }

    static String label(JsonObject j) {
        String scenario = j.getString("scenario");
        return switch (scenario) {
            case "unique" -> Scenarios.label(scenario, j.getLong("sandbox_ms", 0L), j.getInteger("c", 0));
            case "replay" -> scenario + " C=" + j.getInteger("c", 0);
            default -> scenario;
        };
    }

    private static String text(Pass jvm, Pass nat) {
        StringBuilder out = new StringBuilder();
        out.append("PayOnce benchmark: the JVM application and the native executable, one run of scripts/bench.sh"
                + " (BENCH_NATIVE)\n\n");
        out.append(machineLine(jvm));
        out.append(String.format(Locale.ROOT, "date      %s, commit %s; the same port, MariaDB and Redis for both passes,"
                + " the database dropped and created empty before each%n", jvm.machine.getString("date"),
                jvm.machine.getString("commit")));
        out.append(String.format(Locale.ROOT, "JVM       %s: java %s -jar quarkus-run.jar; see report.txt%n",
                jvm.machine.getString("app_vm", jvm.machine.getString("java")), jvm.app.getString("java_opts", "")));
        String nativeOpts = nat.app.getString("native_opts", "");
        out.append(String.format(Locale.ROOT, "native    %s: %s %s; see report-native.txt%n", nat.machine.getString("app_vm"),
                nat.app.getString("executable"), nativeOpts.isBlank() ? "(no runtime options)" : nativeOpts));

        out.append(String.format(Locale.ROOT, "%n  %-38s %10s %10s %11s%n", "", "JVM", "native", "native/JVM"));
        row(out, "start-up, exec to ready (ms)", number(jvm.app, "startup_ms"), number(nat.app, "startup_ms"), "%.0f");
        row(out, "Quarkus \"started in\" (s)", number(jvm.app, "quarkus_started_s"),
                number(nat.app, "quarkus_started_s"), "%.3f");
        row(out, "RSS idle, 3 s after ready (MiB)", number(jvm.app, "idle_rss_mib"), number(nat.app, "idle_rss_mib"), "%.0f");
        row(out, "RSS at the end (MiB)", number(jvm.app, "end_rss_mib"), number(nat.app, "end_rss_mib"), "%.0f");
        row(out, "RSS peak (MiB)", number(jvm.app, "peak_rss_mib"), number(nat.app, "peak_rss_mib"), "%.0f");

        out.append(String.format(Locale.ROOT, "%n  %-18s %4s | %-26s | %-15s | %-15s | %-15s | %s%n",
                "", "", "throughput/s", "p50 ms", "p99 ms", "max ms", "app CPU us/op"));
        out.append(String.format(Locale.ROOT, "  %-18s %4s | %9s %9s %6s | %7s %7s | %7s %7s | %7s %7s | %7s %7s%n",
                "scenario", "C", "JVM", "native", "ratio", "JVM", "native", "JVM", "native", "JVM", "native", "JVM", "native"));
        List<String> jvmOnly = new ArrayList<>(jvm.limits);
        for (Map.Entry<String, JsonObject> e : jvm.scenarios.entrySet()) {
            JsonObject j = e.getValue();
            JsonObject n = nat.scenarios.get(e.getKey());
            if (n == null) {
                jvmOnly.add(e.getKey());
                continue;
            }
            out.append(String.format(Locale.ROOT,
                    "  %-18s %4s | %9.0f %9.0f %6.2f | %7.2f %7.2f | %7.2f %7.2f | %7.2f %7.2f | %7.0f %7.0f%n",
                    e.getKey().replaceFirst(" C=\\d+$", ""), j.getValue("c"), tput(j), tput(n), tput(n) / tput(j),
                    number(j, "p50_ms"), number(n, "p50_ms"), number(j, "p99_ms"), number(n, "p99_ms"),
                    number(j, "max_ms"), number(n, "max_ms"), microsPerOp(j, "app"), microsPerOp(n, "app")));
        }
        out.append("\n  app CPU us/op: the application's CPU time (user and kernel) per payment or replay, from its"
                + " /proc/PID/stat\n");
        if (!jvmOnly.isEmpty()) {
            out.append("  measured in the JVM pass only (report.txt): ").append(String.join(", ", jvmOnly)).append('\n');
        }
        out.append(String.format(Locale.ROOT, "  other processes took at most %.0f%% of a core during the JVM pass's"
                + " measurements, %.0f%% during the native pass's%n", jvm.worstOther, nat.worstOther));
        return out.toString();
    }

    static String machineLine(Pass pass) {
        return String.format(Locale.ROOT, "machine   %s cores (nproc), %s, %s RAM, %s%n", pass.machine.getValue("nproc"),
                pass.machine.getString("cpu"), pass.machine.getString("memory"), pass.machine.getString("os"));
    }

    private static String galeraText(Pass single, Pass galera) {
        StringBuilder out = new StringBuilder();
        out.append("PayOnce benchmark: one instance on one server and two instances on a three-node Galera cluster,"
                + " one run of scripts/bench.sh (BENCH_GALERA)\n\n");
        out.append(machineLine(single));
        out.append(String.format(Locale.ROOT, "date      %s, commit %s; the packaged JVM application with the same"
                + " options (%s) in both passes, the same Redis, the driver on the same machine%n",
                single.machine.getString("date"), single.machine.getString("commit"), single.app.getString("java_opts", "")));
        out.append(String.format(Locale.ROOT, "single    one instance on the shared MariaDB, %s; see report.txt%n",
                single.machine.getString("mariadb")));
        out.append(String.format(Locale.ROOT, "galera-2  two instances, on nodes 1 and 2 of a three-node cluster on"
                + " the same machine, requests spread over both; %s; see report-galera.txt%n",
                galera.machine.getString("mariadb")));

        out.append(String.format(Locale.ROOT, "%n  %-38s %10s %21s%n", "", "single", "galera-2 (1 / 2)"));
        instanceRow(out, "start-up, exec to ready (ms)", single, galera, "startup_ms");
        instanceRow(out, "RSS idle, 3 s after ready (MiB)", single, galera, "idle_rss_mib");
        instanceRow(out, "RSS at the end (MiB)", single, galera, "end_rss_mib");
        out.append("  (the first instance's start-up on the cluster includes the migrations of the fresh schema)\n");

        out.append(String.format(Locale.ROOT, "%n  %-36s %4s | %-24s | %-15s | %s%n", "database limit", "",
                "transactions/s", "p99 ms", "machine CPU us/tx"));
        out.append(String.format(Locale.ROOT, "  %-36s %4s | %8s %8s %6s | %7s %7s | %7s %7s%n", "", "C", "single",
                "galera", "ratio", "single", "galera", "single", "galera"));
        for (Map.Entry<Integer, JsonObject> e : single.dbLimits.entrySet()) {
            JsonObject s = e.getValue();
            JsonObject g = galera.dbLimits.get(e.getKey());
            if (g == null) {
                continue;
            }
            out.append(String.format(Locale.ROOT, "  %-36s %4d | %8.0f %8.0f %6.2f | %7.2f %7.2f | %7.0f %7.0f%n",
                    "BEGIN;INSERT;UPDATE;COMMIT, pool " + s.getValue("pool"), e.getKey(), tput(s), tput(g),
                    tput(g) / tput(s), number(s, "p99_ms"), number(g, "p99_ms"), microsPerOp(s, "all"),
                    microsPerOp(g, "all")));
        }
        out.append("  the cluster's through a pool spread over nodes 1 and 2, as the instances' are\n");

        out.append(String.format(Locale.ROOT, "%n  %-18s %4s | %-24s | %-15s | %-15s | %s%n", "", "", "throughput/s",
                "p50 ms", "p99 ms", "max ms"));
        out.append(String.format(Locale.ROOT, "  %-18s %4s | %8s %8s %6s | %7s %7s | %7s %7s | %7s %7s%n", "scenario", "C",
                "single", "galera", "ratio", "single", "galera", "single", "galera", "single", "galera"));
        List<String> singleOnly = new ArrayList<>();
        List<String> compared = new ArrayList<>();
        for (Map.Entry<String, JsonObject> e : single.scenarios.entrySet()) {
            JsonObject s = e.getValue();
            JsonObject g = galera.scenarios.get(e.getKey());
            if (g == null) {
                singleOnly.add(e.getKey());
                continue;
            }
            // storm and wait are checks of correctness and of wake-up bursts, not throughput
            if (!s.getString("scenario").equals("unique") && !s.getString("scenario").equals("replay")) {
                continue;
            }
            compared.add(e.getKey());
            out.append(String.format(Locale.ROOT,
                    "  %-18s %4s | %8.0f %8.0f %6.2f | %7.2f %7.2f | %7.2f %7.2f | %7.2f %7.2f%n",
                    e.getKey().replaceFirst(" C=\\d+$", ""), s.getValue("c"), tput(s), tput(g), tput(g) / tput(s),
                    number(s, "p50_ms"), number(g, "p50_ms"), number(s, "p99_ms"), number(g, "p99_ms"),
                    number(s, "max_ms"), number(g, "max_ms")));
        }

        out.append(String.format(Locale.ROOT, "%n  %-18s %4s | %-15s | %-15s | %-15s | %-16s | %s%n", "cost per operation",
                "", "app CPU us", "db CPU us", "machine CPU us", "commits", "galera conflicts"));
        out.append(String.format(Locale.ROOT, "  %-18s %4s | %7s %7s | %7s %7s | %7s %7s | %7s %8s | %s%n", "scenario",
                "C", "single", "galera", "single", "galera", "single", "galera", "single", "galera", "cert / bf"));
        for (String key : compared) {
            JsonObject s = single.scenarios.get(key);
            JsonObject g = galera.scenarios.get(key);
            JsonObject certification = g.getJsonObject("galera", new JsonObject());
            out.append(String.format(Locale.ROOT,
                    "  %-18s %4s | %7.0f %7.0f | %7.0f %7.0f | %7.0f %7.0f | %7s %8.2f | %d / %d%n",
                    key.replaceFirst(" C=\\d+$", ""), s.getValue("c"), microsPerOp(s, "app"), microsPerOp(g, "app"),
                    microsPerOp(s, "db"), microsPerOp(g, "db"), microsPerOp(s, "all"), microsPerOp(g, "all"),
                    s.containsKey("commits_per_payment")
                            ? String.format(Locale.ROOT, "%.2f", number(s, "commits_per_payment")) : "-",
                    number(certification, "write_sets_per_op"), certification.getLong("local_cert_failures", 0L),
                    certification.getLong("local_bf_aborts", 0L)));
        }
        out.append("  CPU us: CPU time (user and kernel) per payment or replay from /proc: app = the instances' (both on"
                + " the cluster), db = MariaDB's (the three nodes'), machine = every process's, the driver's included\n");
        out.append("  commits: per operation, the single server's trx_rw_commits (not counted for replays); on the"
                + " cluster the write sets its nodes replicated, one per read-write commit, each certified on every"
                + " node\n");
        out.append("  galera conflicts: commits that failed certification / transactions aborted by a replicated one;"
                + " the application ran each again\n");

        JsonObject storm = galera.scenarios.values().stream().filter(j -> j.getString("scenario").equals("storm"))
                .findFirst().orElse(null);
        if (storm != null) {
            JsonObject certification = storm.getJsonObject("galera", new JsonObject());
            out.append(String.format(Locale.ROOT, "%n  storm on the cluster, %d orders x %d identical copies split across"
                    + " both instances: %.2f%% of the answers identical to their order's first; %d of %d orders with one"
                    + " payment record, %d with one charge; %d certification failures, %d brute-force aborts%n",
                    storm.getInteger("orders"), storm.getInteger("copies"), number(storm, "identical_pct"),
                    storm.getInteger("orders_one_record"), storm.getInteger("orders"),
                    storm.getInteger("orders_one_charge"), certification.getLong("local_cert_failures", 0L),
                    certification.getLong("local_bf_aborts", 0L)));
        }
        if (!singleOnly.isEmpty()) {
            out.append("  measured on the single server only (report.txt): ").append(String.join(", ", singleOnly))
                    .append('\n');
        }
        out.append(String.format(Locale.ROOT, "  other processes took at most %.0f%% of a core during the single"
                + " pass's measurements, %.0f%% during the cluster pass's%n", single.worstOther, galera.worstOther));
        return out.toString();
    }

    /** A figure of the one instance, then of each instance on the cluster, "a / b". */
    private static void instanceRow(StringBuilder out, String what, Pass single, Pass galera, String key) {
        List<String> figures = new ArrayList<>();
        for (JsonObject app : galera.apps) {
            figures.add(String.format(Locale.ROOT, "%.0f", number(app, key)));
        }
        out.append(String.format(Locale.ROOT, "  %-38s %10.0f %21s%n", what, number(single.app, key),
                String.join(" / ", figures)));
    }

    /** A process group's CPU per operation: cpu_pct is percent of one core, so 1 % at 1 op/s is 10,000 us. */
    static double microsPerOp(JsonObject j, String process) {
        JsonObject cpu = j.getJsonObject("cpu_pct");
        return cpu == null ? Double.NaN : number(cpu, process) * 10_000 / tput(j);
    }

    private static void row(StringBuilder out, String what, double jvm, double nat, String format) {
        out.append(String.format(Locale.ROOT, "  %-38s %10s %10s %11s%n", what, String.format(Locale.ROOT, format, jvm),
                String.format(Locale.ROOT, format, nat), jvm > 0 ? String.format(Locale.ROOT, "%.2f", nat / jvm) : "-"));
    }

    static double tput(JsonObject j) {
        return number(j, "tput");
    }

    /** A figure of a line; NaN where the line lacks it, so that a missing figure prints as NaN, not a crash. */
    static double number(JsonObject line, String key) {
        Object value = line.getValue(key);
        if (value instanceof Number n) {
            return n.doubleValue();
        }
        try {
            return Double.parseDouble(String.valueOf(value));
        } catch (NumberFormatException e) {
            return Double.NaN;
        }
    }
}
