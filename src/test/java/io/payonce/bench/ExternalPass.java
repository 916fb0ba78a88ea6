package io.payonce.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

import org.HdrHistogram.Histogram;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisAPI;

/**
 * The benchmark's external pass: several services measured in one run, each charging an external channel that
 * answers at once ({@link InstantChannel}), so that the figures are the service's own cost and not its sandbox's.
 * scripts/bench.sh starts every target before this runs, each on its own port and database: the JVM application,
 * and as asked the native executable, the code a comparison starts from (JVM and native) and the seed design's
 * port. Each target is warmed (payments until its JIT compilers settle, then replays), then the rounds alternate:
 * in each round every target in turn runs {@code unique} (token + pay, a fresh order each) and {@code replay}
 * (copies of one finished request), the first target of a round moving on by one each round. Per target it
 * reports the median of the rounds' throughput and application CPU per operation (user and kernel time from
 * /proc/PID, as {@link CpuMeter} reads it), the latency of all rounds' samples together, and the ratios between
 * targets. Writes report-external.txt and comparison-external.txt, and adds its lines to summary.jsonl (tagged
 * {@code "channel":"external"} and the target).
 *
 * <p>Settings ({@code bench.*}): {@code targets} (names in order: jvm, native, baseline-jvm, baseline-native,
 * seed), for each {@code target.NAME} = {@code port,pid,database,startup ms,idle RSS KiB} and
 * {@code target.NAME.command}; {@code channel.port}, {@code channel.pid}; {@code rounds} (3), {@code c} (16),
 * {@code scale}; {@code append} (add to summary.jsonl rather than write it anew).
 */
public final class ExternalPass {

    /** No timed loop may run longer than this, whatever N was asked for. */
    private static final long TIMED_LIMIT_MS = 90_000;
    private static final long WARM_ROUND_MS = 5000;
    /** The most orders a warm-up round pays (a round ends when they are paid or its time is up). */
    private static final int WARM_ORDERS = 5000;
    private static final String SEED = "seed";

    private ExternalPass() {
    }

    public static void main(String[] args) throws Exception {
        Bench.drive(vertx -> new Run(vertx).run());
    }

    private static String setting(String key, String fallback) {
        return Bench.setting(key, fallback);
    }

    private static long number(String key, long fallback) {
        return Bench.number(key, fallback);
    }

    /** A service measured: where it runs, how it was started, how it is spoken to and metered. */
    private record Target(String name, String runtime, int port, long pid, String database, long startupMs,
            long idleRssKib, String command, Database db, ServiceClient client, CpuMeter cpu) {
    }

    /** One timed loop of one target in one round. */
    private record Measured(String target, String scenario, int round, ClosedLoop.Run run, CpuMeter.Usage usage,
            double channelPct, List<String> checks) {

        double tput() {
            return run.perSecond();
        }

        /** CPU time per operation in µs: a percent of one core at 1 op/s is 10,000 µs. */
        double microsPerOp(double pct) {
            return tput() == 0 ? Double.NaN : pct * 10_000 / tput();
        }

        double appMicros() {
            return microsPerOp(usage.app());
        }
    }

    private static final class Run {

        private final Vertx vertx;
        private final Context context;
        private final double scale = Double.parseDouble(setting("scale", "1"));
        private final int rounds = Integer.parseInt(setting("rounds", "3"));
        private final int concurrency = Integer.parseInt(setting("c", "16"));
        private final String runId = Long.toString(System.currentTimeMillis(), 36);
        private final List<Target> targets = new ArrayList<>();
        private final List<Measured> measured = new ArrayList<>();
        private final List<String> notes = new ArrayList<>();
        private final List<String> errors = new ArrayList<>();
        private final List<String> header = new ArrayList<>();
        private final Map<String, Long> endRssKib = new LinkedHashMap<>();
        private final long channelPid = Long.parseLong(setting("channel.pid", "-1"));

        Run(Vertx vertx) {
            this.vertx = vertx;
            this.context = vertx.getOrCreateContext();
        }

        private int n(int base) {
            return Bench.scaled(base, scale);
        }

        int run() throws Exception {
            Instant began = Instant.now();
            Redis redisClient = Redis.createClient(vertx, setting("redis", "redis://127.0.0.1:6379"));
            RedisAPI redis = RedisAPI.api(redisClient);
            try {
                String info = Bench.await(redis.info(List.of("server"))).toString();
                long redisPid = Long.parseLong(Bench.infoField(info, "process_id", "-1"));
                for (String name : setting("targets", "jvm").split(",")) {
                    targets.add(target(name.trim(), redisPid));
                }
                describe(began, Bench.infoField(info, "redis_version", "unknown"));
                for (Target t : targets) {
                    attempt("warm-up " + t.name(), () -> notes.add(warmUp(t, number("warmup.min.ms", 15_000),
                            number("warmup.max.ms", 120_000), number("warmup.jit.pct", 10), number("warmup.replays.ms", 5_000))));
                }
                for (int r = 0; r < rounds; r++) {
                    for (int k = 0; k < targets.size(); k++) {
                        Target t = targets.get((r + k) % targets.size());
                        int round = r + 1;
                        attempt(t.name() + " unique round " + round, () -> measured.add(unique(t, round, n(3000))));
                        attempt(t.name() + " replay round " + round, () -> measured.add(replay(t, round, n(20000))));
                    }
                }
                for (Target t : targets) {
                    endRssKib.put(t.name(), CpuMeter.memoryKib(t.pid(), "VmRSS"));
                }
                long removed = Bench.removeRedisKeys(redis, runId);
                notes.add("removed " + removed + " Redis keys of this pass (the targets' cached answers under bench_"
                        + runId + "_* merchants)");
            } finally {
                targets.forEach(t -> {
                    t.client().close();
                    t.db().close();
                });
                redisClient.close();
            }
            notes.add(String.format(Locale.ROOT, "the external pass's driver took %d s (build and start-up not included)",
                    Instant.now().getEpochSecond() - began.getEpochSecond()));
            write(Path.of(setting("out", "src/bench")));
            return errors.isEmpty() ? 0 : 2;
        }

        private Target target(String name, long redisPid) {
            String[] f = setting("target." + name, "").split(",");
            if (f.length < 5) {
                throw new IllegalArgumentException("bench.target." + name + " must be port,pid,database,startup ms,idle RSS KiB");
            }
            int port = Integer.parseInt(f[0]);
            long pid = Long.parseLong(f[1]);
            Database db = new Database(vertx, setting("db.host", "127.0.0.1"), List.of(Integer.parseInt(setting("db.port",
                    "3306"))), f[2], setting("db.user", "root"), setting("db.password", ""), true);
            long mariadb = Bench.mariadbPid(db);
            ServiceClient client = name.equals(SEED) ? new ServiceClient.Seed(vertx, port, db, concurrency)
                    : new ServiceClient.PayOnce(vertx, context, port, Integer.parseInt(setting("channel.port", "0")), db,
                            "bench_" + runId + "_" + name, concurrency);
            String runtime = name.equals(SEED) ? "go" : name.endsWith("native") ? "native" : "jvm";
            return new Target(name, runtime, port, pid, f[2], Long.parseLong(f[3]), Long.parseLong(f[4]),
                    setting("target." + name + ".command", "?"), db, client,
                    new CpuMeter(List.of(pid), List.of(mariadb), redisPid));
        }

        private void describe(Instant began, String redis) {
            Database any = targets.get(0).db();
            header.add(String.format(Locale.ROOT, "machine   %d cores (nproc), %s, %s RAM, %s", Machine.cores(),
                    Machine.cpuModel(), Machine.memory(), Machine.os()));
            header.add("java      " + Machine.java() + " (driver and channel)");
            header.add("mariadb   " + Bench.await(any.describeServer()) + "; redis " + redis);
            header.add("date      " + began.truncatedTo(ChronoUnit.SECONDS) + ", commit " + setting("commit", "unknown")
                    + ", load average at start " + Machine.loadAverage() + "; " + setting("quiet", ""));
            header.add("channel   InstantChannel on port " + setting("channel.port", "?") + ", a process of its own:"
                    + " every charge SUCCEEDED at once, counted per merchant; each PayOnce target charges it"
                    + " (payonce.channel.url), its sandbox off, payonce.gateway.client-auth=none, tracing exporter off");
            header.add("targets   each on its own port and database, all started before the first round (an idle one"
                    + " takes almost no CPU), each warmed, then " + rounds + " rounds, every target in turn, the first"
                    + " of a round moving on by one:");
            for (Target t : targets) {
                header.add(String.format(Locale.ROOT, "  %-16s port %d, database %s, ready in %d ms, RSS idle %.0f MiB: %s",
                        t.name(), t.port(), t.database(), t.startupMs(), t.idleRssKib() / 1024.0, t.command()));
            }
            header.add("driver    one Vert.x event loop, WebClient pool = C connections, keep-alive, no pipelining;"
                    + " closed loop at C=" + concurrency + "; set-up (orders, a first payment) untimed");
        }

        /**
         * Payments in rounds of {@value #WARM_ROUND_MS} ms until the target's JIT compilers took less than
         * {@code settledPct} percent of a core over a round (after {@code minMillis}, at most {@code maxMillis}),
         * then replays for {@code replaysMillis}: as the sandbox pass's warm-up (Scenarios), through the target's
         * own client.
         */
        private String warmUp(Target t, long minMillis, long maxMillis, double settledPct, long replaysMillis) {
            long began = System.nanoTime();
            long elapsedMs;
            int round = 0;
            double jitPct;
            int orders = WARM_ORDERS / 5;
            do {
                String batch = "w" + round;
                Bench.await(t.client().orders(batch, orders));
                CpuMeter.Sample start = t.cpu().sample();
                ClosedLoop.Run run = Bench.await(ClosedLoop.run(context, orders, concurrency, WARM_ROUND_MS,
                        i -> t.client().payment(batch, i)));
                // enough for the next round to last its time, no more: on a busy machine a target may make only
                // tens of orders a second
                orders = Math.clamp(2L * run.completed() * WARM_ROUND_MS * 1_000_000 / Math.max(1, run.elapsedNanos()),
                        WARM_ORDERS / 10, WARM_ORDERS);
                jitPct = t.cpu().since(start).appJit();
                if (run.completed() == run.wrong()) {
                    throw new IllegalStateException("no payment of the warm-up was paid: " + run.firstFailure());
                }
                round++;
                elapsedMs = (System.nanoTime() - began) / 1_000_000;
            } while (elapsedMs < maxMillis && (elapsedMs < minMillis || jitPct >= settledPct));
            Bench.await(t.client().orders("wr", 1));
            ClosedLoop.Operation copy = Bench.await(Bench.onLoop(context, () -> t.client().replayOf("wr")));
            Bench.await(ClosedLoop.run(context, Integer.MAX_VALUE, concurrency, replaysMillis, copy));
            return String.format(Locale.ROOT, "warm-up of %s (not measured): %d rounds of payments in %.0f s (orders"
                    + " made included), until its JIT compilers took %.0f%% of a core over a round (%s %.0f%%), then %.0f s"
                    + " of replays", t.name(), round, elapsedMs / 1000.0, jitPct,
                    jitPct < settledPct ? "settled below" : "not settled below, time limit reached;", settledPct,
                    replaysMillis / 1000.0);
        }

        private Measured unique(Target t, int round, int n) {
            String batch = "u" + round;
            String warmBatch = batch + "w";
            int warm = Math.max(200, 2 * concurrency);
            Bench.await(t.client().orders(warmBatch, warm));
            Bench.await(t.client().orders(batch, n));
            Bench.await(ClosedLoop.run(context, warm, concurrency, ServiceClient.SETUP_LIMIT_MS,
                    i -> t.client().payment(warmBatch, i)));
            return timed(t, "unique", round, n, i -> t.client().payment(batch, i), batch, n);
        }

        private Measured replay(Target t, int round, int n) {
            String batch = "p" + round;
            Bench.await(t.client().orders(batch, 1));
            ClosedLoop.Operation copy = Bench.await(Bench.onLoop(context, () -> t.client().replayOf(batch)));
            Bench.await(ClosedLoop.run(context, n(2000), concurrency, ServiceClient.SETUP_LIMIT_MS, copy));
            return timed(t, "replay", round, n, copy, batch, 1);
        }

        /** The timed loop, its CPU, and the checks of its answers and of the batch's records afterwards. */
        private Measured timed(Target t, String scenario, int round, int n, ClosedLoop.Operation operation,
                String batch, int payments) {
            long channelBefore = channelTicks();
            CpuMeter.Sample start = t.cpu().sample();
            ClosedLoop.Run run = Bench.await(ClosedLoop.run(context, n, concurrency, TIMED_LIMIT_MS, operation));
            CpuMeter.Usage usage = t.cpu().since(start);
            double seconds = run.elapsedNanos() / 1e9;
            double channelPct = seconds == 0 ? 0 : (channelTicks() - channelBefore) / seconds;
            List<String> checks = new ArrayList<>();
            checks.add(Scenarios.check(run.completed() == n && run.wrong() == 0 && run.failed() == 0,
                    (run.completed() - run.wrong()) + " of " + n + (scenario.equals("unique") ? " answered paid"
                            : " copies answered with the first answer, byte for byte")
                            + (run.failed() > 0 ? "; " + run.failed() + " transport errors, first: " + run.firstFailure()
                                    : "")
                            + (run.timedOut() ? "; stopped at the time limit after " + run.started() + " requests" : "")));
            checks.addAll(Bench.await(t.client().checkPayments(batch, payments)));
            return new Measured(t.name(), scenario, round, run, usage, channelPct, checks);
        }

        /** The channel's CPU ticks (1/100 s): percent of a core over a second. */
        private long channelTicks() {
            long[] times = CpuMeter.processTimes(channelPid);
            return times[0] + times[1];
        }

        private void attempt(String what, Runnable phase) {
            Bench.attempt("external pass, " + what, phase, errors::add);
        }

        private List<Measured> of(String target, String scenario) {
            return measured.stream().filter(m -> m.target().equals(target) && m.scenario().equals(scenario)).toList();
        }

        private static double median(List<Measured> rounds, ToDoubleFunction<Measured> figure) {
            double[] values = rounds.stream().mapToDouble(figure).sorted().toArray();
            if (values.length == 0) {
                return Double.NaN;
            }
            int mid = values.length / 2;
            return values.length % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
        }

        /** All rounds' latency samples of a target's scenario together. */
        private static Histogram latency(List<Measured> rounds) {
            Histogram all = ClosedLoop.histogram();
            rounds.forEach(m -> all.add(m.run().latency()));
            return all;
        }

        private void write(Path out) throws IOException {
            String comparison = comparisonText();
            String report = reportText(comparison);
            Files.createDirectories(out);
            Files.writeString(out.resolve("report-external.txt"), report);
            Files.writeString(out.resolve("comparison-external.txt"), comparison);
            boolean append = Boolean.parseBoolean(setting("append", "true"));
            Files.writeString(out.resolve("summary.jsonl"), String.join("\n", jsonLines()) + "\n", StandardCharsets.UTF_8,
                    append ? new OpenOption[] { StandardOpenOption.CREATE, StandardOpenOption.APPEND } : new OpenOption[0]);
            System.out.print(report);
            System.out.println("\nwritten: " + out.resolve("report-external.txt") + ", "
                    + out.resolve("comparison-external.txt") + ", " + out.resolve("summary.jsonl")
                    + (append ? " (lines added)" : ""));
        }

        private String reportText(String comparison) {
            StringBuilder out = new StringBuilder("PayOnce benchmark report: the external pass, every target charging an"
                    + " external channel that answers at once (scripts/bench.sh)\n\n");
            header.forEach(line -> out.append(line).append('\n'));
            out.append(String.format(Locale.ROOT, "%nRounds (unique: token + pay, a fresh order each, n=%d; replay: copies"
                    + " of one finished request, n=%d; both C=%d)%n", n(3000), n(20000), concurrency));
            out.append(String.format(Locale.ROOT, "  %5s %-16s %-7s %9s %8s %8s %8s | %9s %8s %8s | %s%n", "round",
                    "target", "", "tput/s", "p50 ms", "p99 ms", "max ms", "app us/op", "db us/op", "chan us",
                    "cpu% app(sys jit) db redis drv other  all"));
            for (Measured m : measured) {
                Histogram h = m.run().latency();
                out.append(String.format(Locale.ROOT, "  %5d %-16s %-7s %9.0f %8.2f %8.2f %8.2f | %9.0f %8.0f %8.0f | %s%n",
                        m.round(), m.target(), m.scenario(), m.tput(), h.getValueAtPercentile(50) / 1000.0,
                        h.getValueAtPercentile(99) / 1000.0, h.getMaxValue() / 1000.0, m.appMicros(),
                        m.microsPerOp(m.usage().db()), m.microsPerOp(m.channelPct()), m.usage().describe()));
            }
            out.append("  app us/op: the target's CPU time (user and kernel, /proc/PID/stat) per payment or copy; db:"
                    + " MariaDB's; chan: the instant channel's (none for the seed, whose channel is a sleep of 0 ms);"
                    + " cpu%: percent of one core, other = everything not listed, the idle targets included\n");
            out.append('\n').append(comparison);
            out.append("\nCorrectness and counts\n");
            for (Measured m : measured) {
                out.append(String.format(Locale.ROOT, "  %s %s round %d%n", m.target(), m.scenario(), m.round()));
                m.checks().forEach(c -> out.append("      ").append(c).append('\n'));
            }
            out.append("\nNotes\n");
            notes.forEach(n -> out.append("  ").append(n).append('\n'));
            double worst = measured.stream().mapToDouble(m -> m.usage().other()).max().orElse(0);
            out.append(String.format(Locale.ROOT, "  other processes (the idle targets and the channel included) took at"
                    + " most %.0f%% of a core during any measurement%n", worst));
            if (!errors.isEmpty()) {
                out.append("\nErrors (phases that could not run)\n");
                errors.forEach(e -> out.append("  ").append(e).append('\n'));
            }
            out.append("\nMachine-readable summary (also in summary.jsonl)\n");
            jsonLines().forEach(line -> out.append("BENCH ").append(line).append('\n'));
            return out.toString();
        }

        /** The medians side by side, the ratios between targets, and the targets of the native's speed. */
        private String comparisonText() {
            StringBuilder out = new StringBuilder();
            out.append(String.format(Locale.ROOT, "Medians of %d rounds, every target against the instant channel (latency:"
                    + " all rounds' samples together)%n", rounds));
            out.append(String.format(Locale.ROOT, "  %-16s %-7s %9s %8s %8s %10s | %s%n", "target", "", "tput/s",
                    "p50 ms", "p99 ms", "app us/op", "RSS MiB idle, after"));
            for (String scenario : List.of("unique", "replay")) {
                for (Target t : targets) {
                    List<Measured> rs = of(t.name(), scenario);
                    if (rs.isEmpty()) {
                        continue;
                    }
                    Histogram h = latency(rs);
                    out.append(String.format(Locale.ROOT, "  %-16s %-7s %9.0f %8.2f %8.2f %10.0f | %.0f, %.0f%n", t.name(),
                            scenario, median(rs, Measured::tput), h.getValueAtPercentile(50) / 1000.0,
                            h.getValueAtPercentile(99) / 1000.0, median(rs, Measured::appMicros),
                            t.idleRssKib() / 1024.0, endRssKib.getOrDefault(t.name(), -1L) / 1024.0));
                }
            }
            out.append("\nRatios of the medians (a / b)\n");
            out.append(String.format(Locale.ROOT, "  %-34s | %12s %12s | %12s %12s%n", "", "unique tput", "app us/op",
                    "replay tput", "app us/op"));
            String[][] pairs = { { "native", "jvm" }, { "jvm", "baseline-jvm" }, { "native", "baseline-native" },
                    { "baseline-native", "baseline-jvm" }, { "jvm", SEED }, { "native", SEED }, { "baseline-jvm", SEED },
                    { "baseline-native", SEED } };
            for (String[] pair : pairs) {
                if (of(pair[0], "unique").isEmpty() || of(pair[1], "unique").isEmpty()) {
                    continue;
                }
                out.append(String.format(Locale.ROOT, "  %-34s | %12.2f %12.2f | %12.2f %12.2f%n", pair[0] + " / " + pair[1],
                        ratio(pair, "unique", Measured::tput), ratio(pair, "unique", Measured::appMicros),
                        ratio(pair, "replay", Measured::tput), ratio(pair, "replay", Measured::appMicros)));
            }
            List<String> judged = targets36();
            if (!judged.isEmpty()) {
                out.append("\nTargets of the native executable's speed (informative; a MISS does not fail the run)\n");
                judged.forEach(line -> out.append("  ").append(line).append('\n'));
            }
            return out.toString();
        }

        private double ratio(String[] pair, String scenario, ToDoubleFunction<Measured> figure) {
            return median(of(pair[0], scenario), figure) / median(of(pair[1], scenario), figure);
        }

        /** Against the code as the comparison starts (baseline-native), and against the JVM of this code. */
        private List<String> targets36() {
            List<String> lines = new ArrayList<>();
            if (!of("native", "unique").isEmpty() && !of("baseline-native", "unique").isEmpty()) {
                for (String scenario : List.of("unique", "replay")) {
                    double now = median(of("native", scenario), Measured::appMicros);
                    double before = median(of("baseline-native", scenario), Measured::appMicros);
                    lines.add(judged(now <= before / 2, "native app CPU per " + (scenario.equals("unique")
                            ? "unique payment" : "replay") + " at most half the baseline's", String.format(Locale.ROOT,
                                    "%.0f us against %.0f us (%.2f)", now, before, now / before)));
                }
            }
            if (!of("native", "unique").isEmpty() && !of("jvm", "unique").isEmpty()) {
                double payments = ratio(new String[] { "native", "jvm" }, "unique", Measured::tput);
                double replays = ratio(new String[] { "native", "jvm" }, "replay", Measured::tput);
                lines.add(judged(payments >= 0.85, "native throughput of unique payments >= 0.85x the JVM's",
                        String.format(Locale.ROOT, "%.2f", payments)));
                lines.add(judged(replays >= 0.8, "native throughput of replays >= 0.8x the JVM's",
                        String.format(Locale.ROOT, "%.2f", replays)));
            }
            return lines;
        }

        private static String judged(boolean pass, String what, String measured) {
            return String.format(Locale.ROOT, "%-4s %-62s %s", pass ? "PASS" : "MISS", what, measured);
        }

        /** A line per target (start-up, memory) and per target's scenario (medians and each round's figures). */
        private List<String> jsonLines() {
            List<String> lines = new ArrayList<>();
            for (Target t : targets) {
                JsonObject tag = new JsonObject().put("runtime", t.runtime()).put("deployment", "single")
                        .put("channel", "external").put("target", t.name());
                lines.add(tag.copy().put("scenario", "app").put("command", t.command()).put("startup_ms", t.startupMs())
                        .put("idle_rss_mib", Result.round(t.idleRssKib() / 1024.0, 1))
                        .put("end_rss_mib", Result.round(endRssKib.getOrDefault(t.name(), -1L) / 1024.0, 1))
                        .put("commit", setting("commit", "unknown")).encode());
                for (String scenario : List.of("unique", "replay")) {
                    List<Measured> rs = of(t.name(), scenario);
                    if (rs.isEmpty()) {
                        continue;
                    }
                    JsonArray tputs = new JsonArray();
                    JsonArray apps = new JsonArray();
                    rs.forEach(m -> {
                        tputs.add(Result.round(m.tput(), 1));
                        apps.add(Result.round(m.appMicros(), 1));
                    });
                    boolean ok = rs.stream().allMatch(m -> m.checks().stream().allMatch(c -> c.startsWith("ok")));
                    lines.add(Result.latency(tag.copy().put("scenario", scenario).put("c", concurrency)
                            .put("n", rs.get(0).run().started()).put("rounds", rs.size())
                            .put("tput", Result.round(median(rs, Measured::tput), 1)), latency(rs))
                            .put("app_us_per_op", Result.round(median(rs, Measured::appMicros), 1))
                            .put("db_us_per_op", Result.round(median(rs, m -> m.microsPerOp(m.usage().db())), 1))
                            .put("tput_rounds", tputs).put("app_us_per_op_rounds", apps).put("checks_ok", ok).encode());
                }
            }
            return lines;
        }
    }
}
