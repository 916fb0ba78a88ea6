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
 * The JVM application and the native executable side by side, from the lines both passes of one run wrote
 * to summary.jsonl: start-up, memory, and each scenario both ran. Writes comparison.txt beside it and
 * prints the same; scripts/bench.sh runs it after the native pass.
 */
public final class Comparison {

    private Comparison() {
    }

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args.length > 0 ? args[0] : "src/bench");
        Map<String, Pass> passes = new LinkedHashMap<>();
        for (String line : Files.readAllLines(dir.resolve("summary.jsonl"))) {
            if (!line.isBlank()) {
                JsonObject j = new JsonObject(line);
                passes.computeIfAbsent(j.getString("runtime", "jvm"), r -> new Pass()).add(j);
            }
        }
        Pass jvm = passes.get("jvm");
        Pass nat = passes.get("native");
        if (jvm == null || nat == null) {
            System.err.println("comparison: " + dir.resolve("summary.jsonl") + " does not hold both a jvm and a native pass");
            System.exit(1);
        }
        String text = text(jvm, nat);
        Files.writeString(dir.resolve("comparison.txt"), text);
        System.out.print(text);
        System.out.println("\nwritten: " + dir.resolve("comparison.txt"));
    }

    /** One pass's lines: its machine and application facts and its measured scenarios, by label. */
    private static final class Pass {
        JsonObject machine = new JsonObject();
        JsonObject app = new JsonObject();
        final Map<String, JsonObject> scenarios = new LinkedHashMap<>();
        final List<String> limits = new ArrayList<>();
        double worstOther;

        void add(JsonObject j) {
            String scenario = j.getString("scenario", "");
            switch (scenario) {
                case "machine" -> machine = j;
                case "app" -> app = j;
                case "limit_redis", "limit_db" -> limits.add(scenario + " C=" + j.getInteger("c"));
                default -> scenarios.put(label(j), j);
            }
            JsonObject cpu = j.getJsonObject("cpu_pct");
            if (cpu != null) {
                worstOther = Math.max(worstOther, cpu.getDouble("other", 0.0));
            }
        }
    }

    private static String label(JsonObject j) {
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
        out.append(String.format(Locale.ROOT, "machine   %s cores (nproc), %s, %s RAM, %s%n", jvm.machine.getValue("nproc"),
                jvm.machine.getString("cpu"), jvm.machine.getString("memory"), jvm.machine.getString("os")));
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
                    number(j, "max_ms"), number(n, "max_ms"), appMicrosPerOp(j), appMicrosPerOp(n)));
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

    private static void row(StringBuilder out, String what, double jvm, double nat, String format) {
        out.append(String.format(Locale.ROOT, "  %-38s %10s %10s %11s%n", what, String.format(Locale.ROOT, format, jvm),
                String.format(Locale.ROOT, format, nat), jvm > 0 ? String.format(Locale.ROOT, "%.2f", nat / jvm) : "-"));
    }

    private static double tput(JsonObject j) {
        return number(j, "tput");
    }

    /** cpu_pct.app is percent of one core over the measurement: 1 % at 1 op/s is 10,000 µs an op. */
    private static double appMicrosPerOp(JsonObject j) {
        JsonObject cpu = j.getJsonObject("cpu_pct");
        return cpu == null ? Double.NaN : number(cpu, "app") * 10_000 / tput(j);
    }

    /** A figure of a line; NaN where the line lacks it, so that a missing figure prints as NaN, not a crash. */
    private static double number(JsonObject line, String key) {
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
