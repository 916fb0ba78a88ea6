package io.payonce.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import io.vertx.core.json.JsonObject;

/**
 * The plain-text report of one pass (the JVM application, the native executable, or two instances on a Galera
 * cluster): machine, application, limits, the scenario table, correctness checks, targets (informative: a miss
 * never fails the run) and one BENCH line per scenario, tagged with the pass's runtime, deployment and channel, which
 * summary.jsonl repeats.
 */
final class Report {

    /** A target from the benchmark's issue, printed next to the figure it is about. */
    record Target(String what, boolean pass, String measured) {
    }

    private final List<String> header = new ArrayList<>();
    private final List<Result> limits = new ArrayList<>();
    private final List<Result> scenarios = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private final List<Target> targets = new ArrayList<>();
    private final List<String> errors = new ArrayList<>();
    private final List<JsonObject> facts = new ArrayList<>();
    private final String runtime;
    private final String deployment;
    private final String title;
    /** Further tags of every BENCH line, such as the rows a pass's database was loaded with. */
    private final JsonObject tags = new JsonObject();

    /**
     * {@code runtime} ({@code jvm}, {@code native}) and {@code deployment} ({@code single}, {@code galera-2})
     * tag every BENCH line; {@code title} heads the text.
     */
    Report(String runtime, String deployment, String title) {
        this.runtime = runtime;
        this.deployment = deployment;
        this.title = title;
    }

    /** Tags every BENCH line with {@code key}, after the runtime and deployment. */
    void tag(String key, Object value) {
        tags.put(key, value);
    }

    void header(String line) {
        header.add(line);
    }

    /** A BENCH line that is not a measured scenario: the machine, the application's start-up and memory. */
    void fact(JsonObject line) {
        facts.add(line);
    }

    void limit(Result r) {
        limits.add(r);
    }

    void scenario(Result r) {
        scenarios.add(r);
    }

    void note(String line) {
        notes.add(line);
    }

    void target(String what, boolean pass, String measured) {
        targets.add(new Target(what, pass, measured));
    }

    void error(String line) {
        errors.add(line);
    }

    List<Result> limits() {
        return limits;
    }

    List<Result> scenarios() {
        return scenarios;
    }

    boolean failed() {
        return !errors.isEmpty();
    }

    String text() {
        StringBuilder out = new StringBuilder();
        out.append(title).append("\n\n");
        header.forEach(line -> out.append(line).append('\n'));

        out.append("\nLimits of this machine (same run; the application's reactive clients, pool sizes and"
                + " prepared-statement caching)\n");
        if (limits.isEmpty()) {
            out.append("  (not measured in this pass; see the notes)\n");
        } else {
            out.append(String.format(Locale.ROOT, "  %-44s %5s %10s %8s %8s %8s %8s   %s%n", "limit", "C", "ops/s",
                    "p50 ms", "p90 ms", "p99 ms", "max ms", "cpu% app(sys jit) db redis drv other  all"));
        }
        for (Result r : limits) {
            out.append(String.format(Locale.ROOT, "  %-44s %5s %10.0f %8.2f %8.2f %8.2f %8.2f   %s%n", r.label(),
                    (int) r.number("c"), r.number("tput"), r.number("p50_ms"), r.number("p90_ms"), r.number("p99_ms"),
                    r.number("max_ms"), r.cpu() == null ? "" : r.cpu().describe()));
            r.checks().forEach(c -> out.append("      ").append(c).append('\n'));
        }

        out.append("\nScenarios (throughput per second; latency per sample in ms; bound = the limit that caps the"
                + " scenario, see below)\n");
        out.append(String.format(Locale.ROOT, "  %-20s %5s %6s %9s %8s %8s %8s %8s %9s %7s   %s%n", "scenario", "C", "n",
                "tput/s", "p50", "p90", "p99", "max", "bound/s", "%bound", "cpu% app(sys jit) db redis drv other  all"));
        for (Result r : scenarios) {
            double bound = r.number("bound");
            out.append(String.format(Locale.ROOT, "  %-20s %5s %6d %9s %8.2f %8.2f %8.2f %8.2f %9s %7s   %s%n",
                    r.label(), Double.isNaN(r.number("c")) ? "" : String.valueOf((int) r.number("c")),
                    (int) r.number("n"), Double.isNaN(r.number("tput")) ? "-"
                            : String.format(Locale.ROOT, "%.1f", r.number("tput")), r.number("p50_ms"), r.number("p90_ms"),
                    r.number("p99_ms"), r.number("max_ms"),
                    Double.isNaN(bound) ? "-" : String.format(Locale.ROOT, "%.0f", bound),
                    Double.isNaN(bound) ? "-" : String.format(Locale.ROOT, "%.0f%%", r.number("pct_of_bound")),
                    r.cpu() == null ? "" : r.cpu().describe()));
        }

        out.append("\nCorrectness and counts\n");
        for (Result r : scenarios) {
            out.append("  ").append(r.label()).append('\n');
            r.checks().forEach(c -> out.append("      ").append(c).append('\n'));
        }

        out.append("\nTargets (informative; a MISS does not fail the run)\n");
        for (Target t : targets) {
            out.append(String.format(Locale.ROOT, "  %-4s %-62s %s%n", t.pass() ? "PASS" : "MISS", t.what(), t.measured()));
        }

        if (!notes.isEmpty()) {
            out.append("\nNotes\n");
            notes.forEach(n -> out.append("  ").append(n).append('\n'));
        }
        if (!errors.isEmpty()) {
            out.append("\nErrors (scenarios that could not run)\n");
            errors.forEach(e -> out.append("  ").append(e).append('\n'));
        }

        out.append("\nMachine-readable summary (also in summary.jsonl)\n");
        for (String line : jsonLines()) {
            out.append("BENCH ").append(line).append('\n');
        }
        return out.toString();
    }

    List<String> jsonLines() {
        List<String> lines = new ArrayList<>();
        facts.forEach(f -> lines.add(tagged(f)));
        limits.forEach(r -> lines.add(tagged(withCpu(r))));
        scenarios.forEach(r -> lines.add(tagged(withCpu(r))));
        return lines;
    }

    /**
     * The line with the pass's runtime and deployment first, so that the passes' lines tell apart; the channel
     * is the application's own sandbox, as the external pass's lines ({@link ExternalPass}) say theirs is not.
     */
    private String tagged(JsonObject line) {
        return new JsonObject().put("runtime", runtime).put("deployment", deployment).put("channel", "sandbox")
                .put("target", runtime).mergeIn(tags).mergeIn(line).encode();
    }

    private static JsonObject withCpu(Result r) {
        JsonObject line = r.summary().copy();
        CpuMeter.Usage u = r.cpu();
        if (u != null) {
            line.put("cpu_pct", new JsonObject().put("app", Result.round(u.app(), 1))
                    .put("app_sys", Result.round(u.appSystem(), 1)).put("app_jit", Result.round(u.appJit(), 1)).put("db", Result.round(u.db(), 1))
                    .put("redis", Result.round(u.redis(), 1)).put("driver", Result.round(u.driver(), 1))
                    .put("other", Result.round(u.other(), 1)).put("all", Result.round(u.total(), 1)));
        }
        return line;
    }

    /**
     * Writes report{suffix}.txt and latency{suffix}.svg, and summary.jsonl: anew, or with {@code append}
     * after the lines an earlier pass of the same run wrote there.
     */
    void write(Path dir, String suffix, boolean append, String svg) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("report" + suffix + ".txt"), text());
        Files.writeString(dir.resolve("summary.jsonl"), String.join("\n", jsonLines()) + "\n", StandardCharsets.UTF_8,
                append ? new OpenOption[] { StandardOpenOption.CREATE, StandardOpenOption.APPEND } : new OpenOption[0]);
        Files.writeString(dir.resolve("latency" + suffix + ".svg"), svg);
    }
}
