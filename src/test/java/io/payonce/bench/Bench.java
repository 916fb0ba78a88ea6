package io.payonce.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Supplier;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisAPI;
import io.vertx.redis.client.Response;

/**
 * The benchmark's driver: measures the machine's limits, runs the payment scenarios against the application
 * that scripts/bench.sh started, and writes report.txt, summary.jsonl and latency.svg. The script runs it once
 * per pass: against the packaged JVM application, then (with {@code bench.runtime=native}) against the native
 * executable, whose pass writes report-native.txt and latency-native.svg and adds its lines to summary.jsonl,
 * and (with {@code bench.deployment=galera-2}) against two instances of the JVM application on a three-node
 * Galera cluster, whose pass writes report-galera.txt and latency-galera.svg and adds its lines too.
 *
 * <p>All load comes from one Vert.x event loop, so the driver takes as little of the two cores as it can
 * and needs no locking; the main thread only sequences the phases and waits. Settings are system
 * properties ({@code bench.*}, see {@link #main}); {@code bench.scale} multiplies every N for a quick run.
 */
public final class Bench {

    private static final long AWAIT_LIMIT_MS = TimeUnit.MINUTES.toMillis(5);

    private Bench() {
    }

    public static void main(String[] args) throws Exception {
        drive(vertx -> new Run(vertx).run());
    }

    /** One run of a driver on the Vert.x it is given; answers the process's exit status. */
    interface Driver {
        int run(Vertx vertx) throws Exception;
    }

    /**
     * Runs a driver on a Vert.x of one event loop, from which all its load comes, closes it, and exits with the
     * driver's status.
     */
    static void drive(Driver driver) throws Exception {
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1).setWorkerPoolSize(1)
                .setInternalBlockingPoolSize(1));
        int exit;
        try {
            exit = driver.run(vertx);
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        System.exit(exit);
    }

    /** A request count times {@code bench.scale}, at least 1. */
    static int scaled(int base, double scale) {
        return Math.max(1, (int) Math.round(base * scale));
    }

    /** Runs one phase; a phase that breaks is handed to {@code broken} and the others still run. */
    static void attempt(String what, Runnable phase, Consumer<String> broken) {
        System.err.println("bench: " + what + " ...");
        long began = System.nanoTime();
        try {
            phase.run();
            System.err.printf(Locale.ROOT, "bench: %s done in %.1f s%n", what, (System.nanoTime() - began) / 1e9);
        } catch (RuntimeException e) {
            e.printStackTrace();
            broken.accept(what + ": " + e.getMessage());
        }
    }

    /** The pid of the MariaDB server {@code db} is connected to; -1 when it cannot be read. */
    static long mariadbPid(Database db) {
        try {
            return Long.parseLong(Files.readString(Path.of(await(db.pidFile()))).trim());
        } catch (Exception e) {
            return -1;
        }
    }

    /** Waits on the main thread; never called on the event loop, which it would block. */
    static <T> T await(Future<T> future) {
        if (Context.isOnEventLoopThread()) {
            throw new IllegalStateException("await on the event loop");
        }
        try {
            return future.toCompletionStage().toCompletableFuture().get(AWAIT_LIMIT_MS, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(String.valueOf(e.getCause()), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("no answer within " + AWAIT_LIMIT_MS + " ms", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Starts {@code work} on the driver's event loop, where the scenarios keep their state. */
    static <T> Future<T> onLoop(Context context, Supplier<Future<T>> work) {
        Promise<T> promise = Promise.promise();
        context.runOnContext(v -> {
            try {
                work.get().onComplete(promise);
            } catch (RuntimeException e) {
                promise.fail(e);
            }
        });
        return promise.future();
    }

    /** Deletes the application's keys for this run's merchants, found by SCAN (never KEYS, never FLUSH). */
    static long removeRedisKeys(RedisAPI redis, String runId) {
        String cursor = "0";
        long removed = 0;
        for (int rounds = 0; rounds < 100_000; rounds++) {
            Response page = await(redis.scan(List.of(cursor, "MATCH", "*bench_" + runId + "_*", "COUNT", "1000")));
            cursor = page.get(0).toString();
            List<String> keys = new ArrayList<>();
            page.get(1).forEach(k -> keys.add(k.toString()));
            if (!keys.isEmpty()) {
                removed += await(redis.del(keys)).toLong();
            }
            if (cursor.equals("0")) {
                break;
            }
        }
        return removed;
    }

    static String infoField(String info, String field, String fallback) {
        for (String line : info.split("\r?\n")) {
            if (line.startsWith(field + ":")) {
                return line.substring(field.length() + 1).trim();
            }
        }
        return fallback;
    }

    static String setting(String key, String fallback) {
        return System.getProperty("bench." + key, fallback);
    }

    static long number(String key, long fallback) {
        return Long.parseLong(setting(key, String.valueOf(fallback)));
    }

    /** A comma-separated setting, such as the ports of several instances: one item per instance. */
    private static List<String> list(String key, String fallback) {
        return List.of(setting(key, fallback).split(",", -1));
    }

    private static List<Long> numbers(String key, String fallback) {
        return list(key, fallback).stream().map(item -> Long.parseLong(item.trim())).toList();
    }

    private static List<Integer> ports(String key, String fallback) {
        return numbers(key, fallback).stream().map(Long::intValue).toList();
    }

    /** One benchmark run with its settings. */
    private static final class Run {

        private final Vertx vertx;
        private final Context context;
        /** The application's instances: one, or one per cluster node that serves one. */
        private final List<Integer> ports = ports("port", "18090");
        private final List<Long> appPids = numbers("app.pid", "-1");
        private final double scale = Double.parseDouble(setting("scale", "1"));
        private final List<String> only = List.of(setting("only", "limits,unique,replay,storm,wait").split(","));
        private final String runId = Long.toString(System.currentTimeMillis(), 36);
        /** {@code jvm} (the packaged application) or {@code native} (the native executable). */
        private final String runtime = setting("runtime", "jvm");
        private final boolean nativePass = runtime.equals("native");
        /**
         * {@code single} (one instance on one server) or {@code galera-2} (two instances, each on a node of a
         * three-node Galera cluster).
         */
        private final String deployment = setting("deployment", "single");
        private final boolean galeraPass = !deployment.equals("single");
        /**
         * In the ten-million-row pass (scripts/bench-rows.sh, on a private server): the rows of each table loaded
         * before it, 0 for its empty database; empty in the other passes.
         */
        private final String rows = setting("rows", "");
        private final boolean rowsPass = !rows.isEmpty();
        private final boolean emptyRowsPass = rows.equals("0");
        private final Report report = new Report(runtime, deployment, nativePass
                ? "PayOnce benchmark report: the native executable (scripts/bench.sh with BENCH_NATIVE)"
                : galeraPass
                        ? "PayOnce benchmark report: two instances on a three-node Galera cluster (scripts/bench.sh"
                                + " with BENCH_GALERA)"
                        : rowsPass
                                ? "PayOnce benchmark report: " + (emptyRowsPass ? "the empty database" : rows
                                        + " orders, payments and tokens") + " on the ten-million-row pass's server"
                                        + " (scripts/bench.sh with BENCH_ROWS)"
                                : "PayOnce benchmark report (scripts/bench.sh)");

        Run(Vertx vertx) {
            this.vertx = vertx;
            this.context = vertx.getOrCreateContext();
            if (rowsPass) {
                report.tag("rows", Long.parseLong(rows));
            }
        }

        private int n(int base) {
            return scaled(base, scale);
        }

        int run() throws Exception {
            Instant began = Instant.now();
            Database db = database(ports("db.port", "3306"));
            List<Database> nodes = new ArrayList<>();
            for (int nodePort : galeraPass ? ports("galera.ports", "") : List.<Integer>of()) {
                nodes.add(database(List.of(nodePort)));
            }
            ClusterCounters cluster = new ClusterCounters(nodes);
            String redisUrl = setting("redis", "redis://127.0.0.1:6379");
            Redis redisClient = Redis.createClient(vertx, redisUrl);
            RedisAPI redis = RedisAPI.api(redisClient);
            try {
                await(db.enableCounters());
                String info = await(redis.info(List.of("server"))).toString();
                List<Long> dbPids = new ArrayList<>();
                for (Database server : galeraPass ? nodes : List.of(db)) {
                    dbPids.add(mariadbPid(server));
                }
                CpuMeter cpu = new CpuMeter(appPids, dbPids, Long.parseLong(infoField(info, "process_id", "-1")));
                describe(db, info, began);

                // what the server commits with the application idle: its scheduled jobs, and anybody else
                Database.Counters idleBefore = await(db.counters());
                Thread.sleep(3000);
                Database.Delta idle = db.delta(idleBefore, await(db.counters()));
                report.note(String.format(Locale.ROOT, "cpu%% columns: percent of one core over the measurement"
                        + " (%d cores: %d = all busy); app(sys jit) = the application, of which in the kernel and in its JIT compiler threads; other ="
                        + " everything not listed, such as another build", Machine.cores(), 100 * Machine.cores()));
                report.note(String.format(Locale.ROOT, "idle (3 s, application started, no load): %.1f rw commits/s;"
                        + " other clients changed %d rows in other schemas meanwhile", idle.rwCommits() / 3.0,
                        idle.foreignRowsChanged()));

                Limits limits = only.contains("limits") ? measureLimits(db, redisUrl, cpu)
                        : galeraPass ? new Limits(singlePassRedisLimit(), Double.NaN, Double.NaN) : earlierLimits();
                Scenarios scenarios = new Scenarios(vertx, context, ports, db, cluster, cpu, runId);
                // right before the scenarios, so that the application's JIT has settled when they start
                attempt("warm-up", () -> report.note(scenarios.warmUp(number("warmup.min.ms", 15000),
                        number("warmup.max.ms", 120000), number("warmup.jit.pct", 10), number("warmup.replays.ms", 5000))));
                if (nativePass) {
                    report.note("native executable: compiled ahead of time, it has no JIT compiler threads, so its"
                            + " warm-up (the same as the JVM's) ends at its minimum; it still fills the pools and caches");
                }
                if (galeraPass) {
                    report.note("two instances: every request goes to the next instance in turn, the copies of one"
                            + " request (replay, storm) are split across both; the app CPU columns are both instances'"
                            + " together, the db columns the three nodes' together; trx_rw_commits are node 1's, which"
                            + " counts the transactions it applies for node 2 as well as its own, while its rows"
                            + " changed and statements are its own share only; the Galera line of each scenario sums"
                            + " the nodes' wsrep counters");
                }
                if (only.contains("unique")) {
                    unique(scenarios, limits, 0, 16, n(3000));
                    unique(scenarios, limits, 0, 256, n(3000));
                    unique(scenarios, limits, 100, 16, n(1000));
                    unique(scenarios, limits, 100, 256, n(3000));
                }
                if (only.contains("replay")) {
                    replay(scenarios, limits, 16, n(20000));
                    replay(scenarios, limits, 64, n(20000));
                }
                if (only.contains("storm")) {
                    attempt("storm", () -> report.scenario(scenarios.storm(n(50), 20, 5)));
                }
                if (only.contains("wait")) {
                    attempt("wait", () -> report.scenario(scenarios.waits(n(40), 10, 10, 1000, 100)));
                }
                if (galeraPass) {
                    report.note("targets: not judged in this pass, they are one instance's on one server;"
                            + " comparison-galera.txt puts this pass's figures beside the single server's");
                } else if (rowsPass) {
                    report.note("targets: not judged in this pass; comparison-rows.txt judges the loaded database's"
                            + " throughput against the empty one's, both on this pass's server");
                } else {
                    targets();
                }
                interference();
                long removed = removeRedisKeys(redis, runId);
                report.note("removed " + removed + " Redis keys of this run (the application's cached answers"
                        + " under bench_" + runId + "_* merchants)");
            } finally {
                try {
                    await(db.restoreCounters());
                } finally {
                    db.close();
                    cluster.close();
                    redisClient.close();
                }
            }
            application();
            report.note(String.format(Locale.ROOT, "bench driver took %d s (build and start-up not included)",
                    Instant.now().getEpochSecond() - began.getEpochSecond()));

            Path out = Path.of(setting("out", "src/bench"));
            String suffix = nativePass ? "-native" : galeraPass ? "-galera"
                    : rowsPass ? (emptyRowsPass ? "-rows-empty" : "-rows") : "";
            boolean laterPass = nativePass || galeraPass || rowsPass;
            report.write(out, suffix, laterPass, LatencyPlot.svg("PayOnce latency by percentile"
                    + (nativePass ? ", native executable (" : galeraPass ? ", two instances on a Galera cluster ("
                            : rowsPass ? (emptyRowsPass ? ", empty database (" : ", " + rows + " rows (") : " (")
                    + Instant.now().truncatedTo(ChronoUnit.SECONDS) + ", commit " + setting("commit", "unknown") + ")",
                    series()));
            System.out.print(report.text());
            System.out.println("\nwritten: " + out.resolve("report" + suffix + ".txt") + ", " + out.resolve("summary.jsonl")
                    + (laterPass ? " (lines added)" : "") + ", " + out.resolve("latency" + suffix + ".svg"));
            return report.failed() ? 2 : 0;
        }

        private Database database(List<Integer> serverPorts) {
            return new Database(vertx, setting("db.host", "127.0.0.1"), serverPorts, setting("db.name", "payonce_bench"),
                    setting("db.user", "root"), setting("db.password", ""),
                    Boolean.parseBoolean(setting("db.cache-prepared", "true")));
        }

        private void describe(Database db, String redisInfo, Instant began) {
            String machine = String.format(Locale.ROOT, "%d cores (nproc), %s, %s RAM, %s", Machine.cores(),
                    Machine.cpuModel(), Machine.memory(), Machine.os());
            String mariadb = await(db.describeServer());
            if (galeraPass) {
                mariadb += "; " + await(db.describeCluster()) + ": three mariadbd of this pass's own on loopback"
                        + " (GaleraCluster) with the shared server's durability and buffer pool, the instances on"
                        + " nodes 1 and 2, node 3 serving none";
            }
            String redis = infoField(redisInfo, "redis_version", "unknown");
            report.header("machine   " + machine);
            report.header(nativePass ? "java      " + Machine.java() + " (driver); the application: "
                    + setting("app.vm", "unknown") + " native image" : "java      " + Machine.java() + " (application and driver)");
            report.header("mariadb   " + mariadb);
            report.header("redis     " + redis);
            report.header("date      " + began.truncatedTo(ChronoUnit.SECONDS) + ", commit " + setting("commit", "unknown")
                    + ", load average at start " + Machine.loadAverage());
            report.header("app       " + appCommand() + (galeraPass
                    ? ", two instances, ports " + setting("port", "?") + ", database " + db.schema() + " on the cluster"
                            + " (created empty for this pass; the first instance migrates it), each charging its own"
                            + " sandbox channel, whose ledger is in the same database"
                    : ", port " + ports.get(0) + ", database " + db.schema() + (!rowsPass || emptyRowsPass
                            ? " (created empty for this pass)" : " (" + rows + " orders, payments and tokens loaded"
                                    + " in bulk before this pass)") + (rowsPass ? " on a private MariaDB" : "")
                            + ", sandbox channel"));
            report.header("driver    one Vert.x event loop; WebClient pool = C connections" + (galeraPass
                    ? " to each instance, every request to the next instance in turn, the copies of one request split"
                            + " across them"
                    : "") + ", keep-alive, no pipelining; closed loop (next request when one answers)");
            report.fact(new JsonObject().put("scenario", "machine").put("nproc", Machine.cores())
                    .put("cpu", Machine.cpuModel()).put("memory", Machine.memory()).put("os", Machine.os())
                    .put("java", Machine.java()).put("app_vm", nativePass ? setting("app.vm", "unknown") : Machine.java())
                    .put("mariadb", mariadb).put("redis", redis)
                    .put("date", began.truncatedTo(ChronoUnit.SECONDS).toString()).put("commit", setting("commit", "unknown"))
                    .put("loadavg", Machine.loadAverage()).put("before_start", setting("quiet", "")));
        }

        /** How scripts/bench.sh started the application in this pass. */
        private String appCommand() {
            if (!nativePass) {
                return "java " + quoted(setting("app.java.opts", "")) + " -jar target/quarkus-app/quarkus-run.jar"
                        + " (JAVA_OPTS from scripts/java25.sh)";
            }
            String opts = setting("app.native.opts", "");
            return setting("app.executable", "?") + (opts.isBlank()
                    ? " with no runtime options, so SubstrateVM sizes the heap from the machine's memory" : " " + opts)
                    + " (JAVA_OPTS are the JVM's and do not apply)";
        }

        /**
         * Start-up and memory of the application, of each instance where there are several: start-up from the
         * script, the end from /proc now.
         */
        private void application() {
            List<Long> idle = numbers("app.idle.rss.kib", "-1");
            List<Long> startup = numbers("app.startup.ms", "-1");
            List<String> startedIns = list("app.started.in", "?");
            for (int i = 0; i < appPids.size(); i++) {
                String instance = appPids.size() == 1 ? "" : "instance " + (i + 1) + ": ";
                long idleKib = idle.get(i);
                long endKib = CpuMeter.memoryKib(appPids.get(i), "VmRSS");
                long peakKib = CpuMeter.memoryKib(appPids.get(i), "VmHWM");
                long startupMs = startup.get(i);
                String startedIn = startedIns.get(i);
                report.header(String.format(Locale.ROOT, "start-up  %s%d ms from exec to the first 200 of /q/health/ready"
                        + " (Quarkus: started in %ss)%s", instance, startupMs, startedIn,
                        galeraPass && i == 0 ? ", migrations of the fresh schema on the cluster included" : ""));
                report.header(String.format(Locale.ROOT, "memory    %sRSS idle %.0f MiB (after start-up and a 3 s settle),"
                        + " at the end %.0f MiB, peak %.0f MiB", instance, idleKib / 1024.0, endKib / 1024.0,
                        peakKib / 1024.0));
                JsonObject app = new JsonObject().put("scenario", "app");
                if (appPids.size() > 1) {
                    app.put("instance", i + 1);
                }
                if (nativePass) {
                    app.put("executable", setting("app.executable", "?")).put("native_opts", setting("app.native.opts", ""));
                } else {
                    app.put("java_opts", setting("app.java.opts", ""));
                }
                report.fact(app.put("startup_ms", startupMs).put("quarkus_started_s", startedIn)
                        .put("idle_rss_mib", Result.round(idleKib / 1024.0, 1))
                        .put("end_rss_mib", Result.round(endKib / 1024.0, 1))
                        .put("peak_rss_mib", Result.round(peakKib / 1024.0, 1)));
                if (!galeraPass && !rowsPass) {
                    targets(idleKib, endKib, startupMs, startedIn);
                }
            }
        }

        /** The targets of the one instance's start-up and memory. */
        private void targets(long idleKib, long endKib, long startupMs, String startedIn) {
            report.target("idle RSS < 200 MiB", idleKib > 0 && idleKib < 200 * 1024,
                    String.format(Locale.ROOT, "%.0f MiB", idleKib / 1024.0));
            report.target("RSS at the end < 400 MiB", endKib > 0 && endKib < 400 * 1024,
                    String.format(Locale.ROOT, "%.0f MiB", endKib / 1024.0));
            report.target("start-up < 3 s (exec to ready)", startupMs > 0 && startupMs < 3000,
                    String.format(Locale.ROOT, "%.2f s (Quarkus: %s s)", startupMs / 1000.0, startedIn));
        }

        /** The measured ceilings; NaN where not measured. */
        private record Limits(double redis16, double db16, double db256) {
            static final Limits NONE = new Limits(Double.NaN, Double.NaN, Double.NaN);

            double db(int concurrency) {
                return concurrency == 16 ? db16 : concurrency == 256 ? db256 : Double.NaN;
            }
        }

        /**
         * A pass that does not measure the limits (the native pass: they are the machine's, not the application's)
         * takes them from the lines an earlier pass of the same run wrote to {@code bench.limits.from}, if any.
         */
        private Limits earlierLimits() {
            String from = setting("limits.from", "");
            Limits figures = recordedLimits(from);
            if (figures == Limits.NONE) {
                return figures;
            }
            report.note(String.format(Locale.ROOT, "limits of the machine: not measured again in this pass; the bounds"
                    + " are those the JVM pass of this run measured (%s): Redis %.0f/s, DB %.0f/s at C=16 and %.0f/s"
                    + " at C=256", from, figures.redis16(), figures.db16(), figures.db256()));
            return figures;
        }

        /** The single server's limits an earlier pass wrote to {@code from}; NONE (and a note why) if none. */
        private Limits recordedLimits(String from) {
            if (from.isEmpty() || !Files.isReadable(Path.of(from))) {
                return Limits.NONE;
            }
            double[] figures = { Double.NaN, Double.NaN, Double.NaN };
            try {
                for (String line : Files.readAllLines(Path.of(from))) {
                    JsonObject j = new JsonObject(line);
                    if (!j.getString("deployment", "single").equals("single")) {
                        continue;
                    }
                    int c = j.getInteger("c", 0);
                    switch (j.getString("scenario", "") + " " + c) {
                        case "limit_redis 16" -> figures[0] = j.getDouble("tput");
                        case "limit_db 16" -> figures[1] = j.getDouble("tput");
                        case "limit_db 256" -> figures[2] = j.getDouble("tput");
                        default -> {
                            // not a limit
                        }
                    }
                }
            } catch (IOException | RuntimeException e) {
                report.note("limits of the machine: could not be read from " + from + ": " + e.getMessage());
                return Limits.NONE;
            }
            if (Double.isNaN(figures[0]) && Double.isNaN(figures[1]) && Double.isNaN(figures[2])) {
                report.note("limits of the machine: not measured in this run (BENCH_ONLY), so no bounds");
                return Limits.NONE;
            }
            return new Limits(figures[0], figures[1], figures[2]);
        }

        /**
         * The pass on the cluster uses the single server's Redis, so the Redis limit the JVM pass measured stands;
         * NaN, and replays have no bound, when it did not measure one.
         */
        private double singlePassRedisLimit() {
            String from = setting("limits.from", "");
            double redis = recordedLimits(from).redis16();
            report.note(Double.isNaN(redis)
                    ? "limits: the Redis limit was not measured in this run, so replays have no bound"
                    : String.format(Locale.ROOT, "limits: the Redis limit is the one the JVM pass of this run measured"
                            + " on the same Redis server (%s): %.0f/s", from, redis));
            if (!only.contains("limits")) {
                report.note("limits: the cluster's DB limits were not measured (BENCH_ONLY), so payments have no bound");
            }
            return redis;
        }

        /**
         * The limits, measured. On the cluster only the database's: its transactions through a pool spread over
         * the nodes the instances use, as theirs are; the Redis server is the single pass's, whose limit stands.
         */
        private Limits measureLimits(Database db, String redisUrl, CpuMeter cpu) {
            int dbPool = (int) number("db.pool", 32);
            int redisPool = (int) number("redis.pool", 32);
            MachineLimits machine = new MachineLimits(vertx, context, db, redisUrl, dbPool, redisPool);
            double[] figures = { Double.NaN, Double.NaN, Double.NaN };
            if (galeraPass) {
                report.note("limits: the DB limits are the cluster's, through a pool spread over nodes 1 and 2");
                figures[0] = singlePassRedisLimit();
            } else {
                measureRedis(machine, redisPool, cpu, figures);
            }
            int[] levels = { 16, 256 };
            for (int i = 0; i < levels.length; i++) {
                int c = levels[i];
                int slot = i + 1;
                attempt("limit db C=" + c, () -> {
                    CpuMeter.Sample start = cpu.sample();
                    MachineLimits.Limit l = machine.databaseTransactions(c, 2000, 5000);
                    CpuMeter.Usage usage = cpu.since(start);
                    figures[slot] = l.run().perSecond();
                    List<String> checks = cpuBound(usage);
                    int done = Math.max(1, l.run().completed());
                    checks.add(String.format(Locale.ROOT, "trx_rw_commits per transaction: %.3f (expected 1: the"
                            + " counter check%s); per transaction %.2f COM_STMT_EXECUTE, %.2f COM_STMT_PREPARE%s",
                            l.commitsPerOp(), galeraPass ? "; node 1's, its own and those it applied for node 2" : "",
                            l.statements().getOrDefault("com_stmt_execute", 0L) / (double) done,
                            l.statements().getOrDefault("com_stmt_prepare", 0L) / (double) done,
                            l.foreignRowsChanged() > 0
                                    ? "; other clients changed " + l.foreignRowsChanged() + " rows meanwhile"
                                    : ""));
                    report.limit(new Result("db BEGIN;INSERT;UPDATE;COMMIT, pool " + dbPool
                            + (galeraPass ? " over 2 nodes" : ""), Result.figures(
                            new JsonObject().put("scenario", "limit_db").put("c", c).put("pool", dbPool)
                                    .put("cache_prepared_statements", Boolean.parseBoolean(setting("db.cache-prepared", "true"))),
                            l.run())
                            .put("commits_per_tx", Result.round(l.commitsPerOp(), 3))
                            .put("foreign_rows_changed", l.foreignRowsChanged()), l.run().latency(),
                            checks, usage));
                });
            }
            return new Limits(figures[0], figures[1], figures[2]);
        }

        private void measureRedis(MachineLimits machine, int redisPool, CpuMeter cpu, double[] figures) {
            attempt("limit redis", () -> {
                CpuMeter.Sample start = cpu.sample();
                MachineLimits.Limit l = machine.redisRoundTrips(runId, 16, 2000, 5000);
                CpuMeter.Usage usage = cpu.since(start);
                figures[0] = l.run().perSecond();
                report.limit(new Result("redis GET/SET round trips, pool " + redisPool, Result.figures(
                        new JsonObject().put("scenario", "limit_redis").put("c", 16).put("pool", redisPool), l.run()),
                        l.run().latency(), cpuBound(usage), usage));
            });
        }

        /** Says when a limit is the CPU's: on two cores the client and the server share it. */
        private static List<String> cpuBound(CpuMeter.Usage usage) {
            double all = 100.0 * Machine.cores();
            if (usage.total() < 0.85 * all) {
                return new ArrayList<>();
            }
            return new ArrayList<>(List.of(String.format(Locale.ROOT, "the machine was %.0f%% busy of %.0f%%: this"
                    + " limit is the CPU's, the client (the driver: %.0f%%) and the server sharing the cores",
                    usage.total(), all, usage.driver())));
        }

        private void unique(Scenarios scenarios, Limits limits, long sandboxMs, int c, int n) {
            attempt(Scenarios.label("unique", sandboxMs, c), () -> {
                Result r = scenarios.unique(sandboxMs, c, n, Math.max(200, 2 * c));
                double cpp = r.number("commits_per_payment");
                double dbBound = limits.db(c) / cpp;
                double bound = sandboxMs == 0 ? dbBound : Math.min(c / (sandboxMs / 1000.0), dbBound);
                if (!Double.isNaN(dbBound)) {
                    r.summary().put("db_limit", Result.round(limits.db(c), 1)).put("db_bound", Result.round(dbBound, 1));
                }
                if (sandboxMs > 0) {
                    r.summary().put("latency_bound", Result.round(c / (sandboxMs / 1000.0), 1));
                }
                bounded(r, bound);
                report.scenario(r);
            });
        }

        private void replay(Scenarios scenarios, Limits limits, int c, int n) {
            attempt("replay C=" + c, () -> {
                Result r = scenarios.replay(c, n, n(2000));
                if (!Double.isNaN(limits.redis16())) {
                    r.summary().put("redis_limit", Result.round(limits.redis16(), 1));
                }
                bounded(r, limits.redis16());
                report.scenario(r);
            });
        }

        private static void bounded(Result r, double bound) {
            if (!Double.isNaN(bound) && !Double.isInfinite(bound) && bound > 0) {
                r.summary().put("bound", Result.round(bound, 1))
                        .put("pct_of_bound", Result.round(100 * r.number("tput") / bound, 1));
            }
        }

        private void targets() {
            for (Result r : report.scenarios()) {
                String scenario = r.summary().getString("scenario");
                double c = r.number("c");
                if (scenario.equals("replay") && c == 16) {
                    report.target("replay C=16 p99 < 5 ms", r.number("p99_ms") < 5, ms(r.number("p99_ms")));
                    report.target("replay C=16 throughput >= 1/3 of the Redis round-trip limit",
                            r.number("pct_of_bound") >= 100.0 / 3, pct(r) + " of " + perSecond(r.number("bound")));
                }
                if (scenario.equals("unique") && r.number("sandbox_ms") == 0) {
                    report.target("unique 0 ms C=" + (int) c + " >= 70% of DB limit / commits per payment",
                            r.number("pct_of_bound") >= 70, pct(r) + " of " + perSecond(r.number("bound")));
                    report.target("unique 0 ms C=" + (int) c + " commits per payment <= 3",
                            r.number("commits_per_payment") <= 3,
                            String.format(Locale.ROOT, "%.2f", r.number("commits_per_payment")));
                }
                if (scenario.equals("unique") && r.number("sandbox_ms") == 100 && c == 256) {
                    double latencyBound = r.number("latency_bound");
                    report.target("unique 100 ms C=256 >= 80% of 256 / 0.1 s",
                            r.number("tput") >= 0.8 * latencyBound, String.format(Locale.ROOT,
                                    "%.0f%% of %s (and %.0f%% of the DB bound %s)", 100 * r.number("tput") / latencyBound,
                                    perSecond(latencyBound), 100 * r.number("tput") / r.number("db_bound"),
                                    perSecond(r.number("db_bound"))));
                }
                if (scenario.equals("storm")) {
                    report.target("storm: 100% identical answers", r.number("identical_pct") == 100,
                            r.number("identical_pct") + "%");
                    report.target("storm: 1 payment record and 1 charge per order",
                            r.number("orders_one_record") == r.number("orders")
                                    && r.number("orders_one_charge") == r.number("orders"),
                            (int) r.number("orders_one_record") + " and " + (int) r.number("orders_one_charge")
                                    + " of " + (int) r.number("orders") + " orders");
                }
                if (scenario.equals("wait")) {
                    report.target("wait: wake-up p99 < 10 ms", r.number("p99_ms") < 10, ms(r.number("p99_ms")));
                }
            }
        }

        /** Says so when something else on the machine took CPU while a figure was being measured. */
        private void interference() {
            List<Result> measured = new ArrayList<>(report.limits());
            measured.addAll(report.scenarios());
            double worst = 0;
            String where = "";
            for (Result r : measured) {
                if (r.cpu() != null && r.cpu().other() > worst) {
                    worst = r.cpu().other();
                    where = r.label();
                }
            }
            String quiet = setting("quiet", "");
            if (!quiet.isEmpty()) {
                report.note("before start: " + quiet);
            }
            if (worst > 20) {
                report.note(String.format(Locale.ROOT, "WARNING other processes took up to %.0f%% of a core while"
                        + " figures were measured (%s): the figures are lower than this machine can do", worst, where));
            } else {
                report.note(String.format(Locale.ROOT, "other processes took at most %.0f%% of a core during any"
                        + " measurement", worst));
            }
        }

        private static String ms(double value) {
            return String.format(Locale.ROOT, "%.2f ms", value);
        }

        private static String pct(Result r) {
            return String.format(Locale.ROOT, "%.0f%%", r.number("pct_of_bound"));
        }

        private static String perSecond(double value) {
            return String.format(Locale.ROOT, "%.0f/s", value);
        }

        private List<LatencyPlot.Series> series() {
            List<LatencyPlot.Series> series = new ArrayList<>();
            for (Result r : report.scenarios()) {
                if (r.plotted() != null && r.plotted().getTotalCount() > 0) {
                    series.add(new LatencyPlot.Series(r.summary().getString("scenario").equals("wait")
                            ? r.label() + " wake-up spread" : r.label(), r.plotted()));
                }
            }
            return series;
        }

        /** A request count times {@code bench.scale}, at least 1. */
    static int scaled(int base, double scale) {
        return Math.max(1, (int) Math.round(base * scale));
    }

    /** Runs one phase; a phase that breaks is reported and the others still run. */
        private void attempt(String what, Runnable phase) {
            Bench.attempt(what, phase, report::error);
        }

        private static String quoted(String opts) {
            return opts.isBlank() ? "(no options)" : opts;
        }
    }
}
