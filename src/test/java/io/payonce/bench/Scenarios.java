package io.payonce.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.IntFunction;

import org.HdrHistogram.Histogram;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;

/**
 * The payment scenarios, each against the running application through its public API only, each under
 * a merchant of its own (and another for its warm-up), so no scenario sees another's orders, tokens or
 * cached answers. Timed phases exclude set-up (orders, tokens) and warm-up. Against several instances the
 * requests are spread over them ({@link PayApi}), and the copies of one request are split across them.
 */
final class Scenarios {

    /** No timed phase may run longer than this, whatever N was asked for. */
    private static final long TIMED_LIMIT_MS = 90_000;
    private static final long SETUP_LIMIT_MS = 60_000;
    /** Concurrency of the untimed set-up calls (orders, tokens, ledger reads). */
    private static final int SETUP_CONCURRENCY = 16;

    private final Vertx vertx;
    private final Context context;
    /** The application's instances. */
    private final List<Integer> ports;
    private final Database db;
    private final ClusterCounters cluster;
    private final CpuMeter cpu;
    private final String runId;

    Scenarios(Vertx vertx, Context context, List<Integer> ports, Database db, ClusterCounters cluster, CpuMeter cpu,
            String runId) {
        this.vertx = vertx;
        this.context = context;
        this.ports = List.copyOf(ports);
        this.db = db;
        this.cluster = cluster;
        this.cpu = cpu;
        this.runId = runId;
    }

    /** Merchant ids carry the run id, so a run never meets an earlier run's Redis entries. */
    private String merchant(String scenario) {
        return "bench_" + runId + "_" + scenario;
    }

    /** One round of the warm-up: long enough to read the JIT compilers' share over it. */
    private static final long WARM_ROUND_MS = 5000;

    /**
     * Not measured: payments in rounds of {@value #WARM_ROUND_MS} ms until the application's JIT compilers
     * took less than {@code settledPct} percent of a core over a round (after {@code minMillis}, at most
     * {@code maxMillis}), then replays for {@code replaysMillis}. On two cores the compilers take a third of
     * the application's CPU for about a minute of load; figures taken meanwhile are of code still being
     * compiled, not of the service as it runs. Answers what it did, for the report.
     */
    String warmUp(long minMillis, long maxMillis, double settledPct, long replaysMillis) {
        long began = System.nanoTime();
        long elapsedMs;
        int rounds = 0;
        double jitPct;
        do {
            PayApi api = PayApi.connect(vertx, ports, SETUP_CONCURRENCY, merchant("warmup" + rounds));
            try {
                int orders = 5000;
                createOrders(api, orders, SETUP_CONCURRENCY);
                CpuMeter.Sample start = cpu.sample();
                Bench.await(ClosedLoop.run(context, orders, SETUP_CONCURRENCY, WARM_ROUND_MS,
                        i -> tokenThenPay(api, i, new TreeMap<>())));
                jitPct = cpu.since(start).appJit();
            } finally {
                api.close();
            }
            rounds++;
            elapsedMs = (System.nanoTime() - began) / 1_000_000;
        } while (elapsedMs < maxMillis && (elapsedMs < minMillis || jitPct >= settledPct));
        PayApi api = PayApi.connect(vertx, ports, SETUP_CONCURRENCY, merchant("warmup"));
        try {
            String token = Bench.await(api.issueToken());
            Buffer body = PayApi.payBody("replay", "replay");
            Bench.await(api.requireOrder("replay"));
            Bench.await(api.pay(token, body));
            Bench.await(ClosedLoop.run(context, Integer.MAX_VALUE, SETUP_CONCURRENCY, replaysMillis,
                    i -> api.payOn(i, token, body).map(r -> r.statusCode() == 200)));
        } finally {
            api.close();
        }
        return String.format(Locale.ROOT, "warm-up (not measured): %d rounds of payments at C=%d in %.0f s (orders"
                + " created included), until the JIT compilers took %.0f%% of a core over a round (%s %.0f%%), then"
                + " %.0f s of replays", rounds, SETUP_CONCURRENCY, elapsedMs / 1000.0, jitPct,
                jitPct < settledPct ? "settled below" : "not settled below, time limit reached; target", settledPct,
                replaysMillis / 1000.0);
    }

    /**
     * N payments, each with its own order, token and request number: the token issue and the pay call
     * together are one latency sample. With {@code sandboxMs} every charge takes that long at the channel.
     */
    Result unique(long sandboxMs, int concurrency, int n, int warm) {
        String merchant = merchant("unique" + sandboxMs + "c" + concurrency);
        PayApi api = PayApi.connect(vertx, ports, concurrency, merchant);
        PayApi warmApi = api.as(merchant + "_warm");
        try {
            createOrders(warmApi, warm, concurrency);
            createOrders(api, n, concurrency);
            Map<Integer, Integer> statuses = new TreeMap<>();
            ClosedLoop.Run run;
            CpuMeter.Usage usage;
            Database.Delta delta;
            JsonObject galera;
            if (sandboxMs > 0) {
                Bench.await(api.sandboxLatency(sandboxMs, warm + n));
            }
            try {
                Bench.await(ClosedLoop.run(context, warm, concurrency, SETUP_LIMIT_MS,
                        i -> tokenThenPay(warmApi, i, new TreeMap<>())));
                Database.Counters before = Bench.await(db.counters());
                ClusterCounters.Reading clusterBefore = Bench.await(cluster.read());
                CpuMeter.Sample start = cpu.sample();
                run = Bench.await(ClosedLoop.run(context, n, concurrency, TIMED_LIMIT_MS, i -> tokenThenPay(api, i, statuses)));
                usage = cpu.since(start);
                delta = db.delta(before, Bench.await(db.counters()));
                galera = cluster.since(clusterBefore, Bench.await(cluster.read()), run.completed());
            } finally {
                if (sandboxMs > 0) {
                    Bench.await(api.sandboxLatency(0, 0));
                }
            }

            long payments = Bench.await(db.count("SELECT COUNT(*) FROM payments WHERE merchant_id = ?", merchant));
            long paidOrders = Bench.await(db.count(
                    "SELECT COUNT(*) FROM orders WHERE merchant_id = ? AND status = 'PAID'", merchant));
            long charges = Bench.await(db.count(
                    "SELECT COUNT(*) FROM sandbox_charges WHERE merchant_id = ? AND status = 'SUCCEEDED'", merchant));
            int sample = Math.min(20, n);
            long[] sampled = ledgerCharges(api, sample, i -> "o" + (long) i * n / sample);
            long sampleOk = 0;
            for (long c : sampled) {
                sampleOk += c == 1 ? 1 : 0;
            }
            double commitsPerPayment = run.completed() == 0 ? 0 : (double) delta.rwCommits() / run.completed();

            JsonObject summary = Result.figures(new JsonObject().put("scenario", "unique")
                    .put("sandbox_ms", sandboxMs).put("c", concurrency), run)
                    .put("statuses", statusJson(statuses))
                    .put("commits_per_payment", Result.round(commitsPerPayment, 2))
                    .put("rw_commits", delta.rwCommits())
                    .put("rows_changed_per_payment", perPayment(delta.ownRowsChanged(), run.completed()))
                    .put("statements_per_payment", perPayment(delta.statements(), run.completed()))
                    .put("foreign_rows_changed", delta.foreignRowsChanged())
                    .put("payment_rows", payments).put("paid_orders", paidOrders).put("ledger_charges", charges)
                    .put("ledger_sample", sample).put("ledger_sample_one_charge", sampleOk);
            List<String> checks = new ArrayList<>();
            checks.add(check(run.completed() == n && run.wrong() == 0 && run.failed() == 0,
                    "answers 200 PAID: " + (run.completed() - run.wrong()) + " of " + n + " " + statuses
                            + errors(run)));
            checks.add(check(payments == n && paidOrders == n && charges == n,
                    "MySQL: " + payments + " payment rows, " + paidOrders + " PAID orders, " + charges
                            + " ledger charges (expected " + n + " each)"));
            checks.add(check(sampleOk == sample, "GET /sandbox/charges: " + sampleOk + " of " + sample
                    + " sampled orders show exactly 1 charge"));
            checks.add("commits: " + delta.rwCommits() + " trx_rw_commits over " + run.completed() + " payments = "
                    + String.format("%.2f", commitsPerPayment) + " per payment; rows changed per payment "
                    + perPayment(delta.ownRowsChanged(), run.completed()).encode()
                    + "; server statements and temporary tables per payment " + perPayment(delta.statements(), run.completed()).encode()
                    + (delta.foreignRowsChanged() > 0
                            ? "; WARNING other clients changed " + delta.foreignRowsChanged()
                                    + " rows in other schemas meanwhile, so the count includes their commits"
                            : "; no other schema changed a row meanwhile"));
            clusterFigures(summary, checks, galera, "payment");
            return new Result(label("unique", sandboxMs, concurrency), summary, run.latency(), checks, usage);
        } finally {
            api.close();
        }
    }

    private Future<Boolean> tokenThenPay(PayApi api, int i, Map<Integer, Integer> statuses) {
        return api.issueToken()
                .compose(token -> api.pay(token, PayApi.payBody("o" + i, "r" + i)))
                .map(r -> {
                    statuses.merge(r.statusCode(), 1, Integer::sum);
                    return PayApi.paid(r);
                });
    }

    /** N copies of one finished request: each must be the stored answer, byte for byte, marked replayed. */
    Result replay(int concurrency, int n, int warm) {
        String merchant = merchant("replay" + concurrency);
        PayApi api = PayApi.connect(vertx, ports, concurrency, merchant);
        try {
            Bench.await(api.requireOrder("o0"));
            String token = Bench.await(api.issueToken());
            Buffer body = PayApi.payBody("o0", "r0");
            HttpResponse<Buffer> first = Bench.await(api.pay(token, body));
            if (!PayApi.paid(first)) {
                throw new IllegalStateException("the request to replay answered " + first.statusCode() + ": "
                        + first.bodyAsString());
            }
            Buffer expected = first.body();
            Map<Integer, Integer> statuses = new TreeMap<>();
            ClosedLoop.Operation copy = i -> api.payOn(i, token, body).map(r -> {
                statuses.merge(r.statusCode(), 1, Integer::sum);
                return r.statusCode() == 200 && PayApi.replayed(r) && expected.equals(r.body());
            });
            Bench.await(ClosedLoop.run(context, warm, concurrency, SETUP_LIMIT_MS, copy));
            statuses.clear();
            ClusterCounters.Reading clusterBefore = Bench.await(cluster.read());
            CpuMeter.Sample start = cpu.sample();
            ClosedLoop.Run run = Bench.await(ClosedLoop.run(context, n, concurrency, TIMED_LIMIT_MS, copy));
            CpuMeter.Usage usage = cpu.since(start);
            JsonObject galera = cluster.since(clusterBefore, Bench.await(cluster.read()), run.completed());
            JsonObject summary = Result.figures(new JsonObject().put("scenario", "replay").put("c", concurrency), run)
                    .put("statuses", statusJson(statuses));
            List<String> checks = new ArrayList<>(List.of(check(run.completed() == n && run.wrong() == 0 && run.failed() == 0,
                    (run.completed() - run.wrong()) + " of " + n
                            + " copies 200, Idempotent-Replayed: true, body identical to the first " + statuses
                            + errors(run))));
            clusterFigures(summary, checks, galera, "replay");
            return new Result("replay C=" + concurrency, summary, run.latency(), checks, usage);
        } finally {
            api.close();
        }
    }

    /** One copy's answer in a storm or a wait: status and body, and its place in the arrival order. */
    private record Answer(int status, Buffer body, boolean replayed, long arrival) {

        boolean sameAs(Answer other) {
            return other != null && status == other.status && body != null && body.equals(other.body);
        }
    }

    /**
     * {@code orders} orders, {@code copies} identical requests each, an order's copies sent in the same
     * instant over connections of their own, {@code ordersAtOnce} orders at a time.
     */
    Result storm(int orders, int copies, int ordersAtOnce) {
        String merchant = merchant("storm");
        PayApi api = PayApi.connect(vertx, ports, copies * ordersAtOnce, merchant);
        PayApi warmApi = api.as(merchant + "_warm");
        try {
            // the warm-up storm also opens every connection, so the timed copies leave together
            String[] warmTokens = createOrdersAndTokens(warmApi, ordersAtOnce);
            Bench.await(Bench.onLoop(context, () -> burst(warmApi, warmTokens, 0, ordersAtOnce, copies,
                    new Answer[ordersAtOnce][copies], ClosedLoop.histogram(), new long[1])));
            String[] tokens = createOrdersAndTokens(api, orders);

            Answer[][] answers = new Answer[orders][copies];
            Histogram latency = ClosedLoop.histogram();
            long[] arrivals = new long[1];
            ClusterCounters.Reading clusterBefore = Bench.await(cluster.read());
            CpuMeter.Sample start = cpu.sample();
            long began = System.nanoTime();
            for (int from = 0; from < orders; from += ordersAtOnce) {
                int batchFrom = from;
                int batchTo = Math.min(orders, from + ordersAtOnce);
                Bench.await(Bench.onLoop(context, () -> burst(api, tokens, batchFrom, batchTo, copies, answers,
                        latency, arrivals)));
            }
            long elapsed = System.nanoTime() - began;
            CpuMeter.Usage usage = cpu.since(start);
            JsonObject galera = cluster.since(clusterBefore, Bench.await(cluster.read()), orders);

            Map<Integer, Integer> statuses = new TreeMap<>();
            int identical = 0;
            int firstPaid = 0;
            for (Answer[] copiesOfOne : answers) {
                Answer first = null;
                for (Answer a : copiesOfOne) {
                    statuses.merge(a.status(), 1, Integer::sum);
                    if (a.status() > 0 && (first == null || a.arrival() < first.arrival())) {
                        first = a;
                    }
                }
                for (Answer a : copiesOfOne) {
                    identical += a.sameAs(first) ? 1 : 0;
                }
                firstPaid += first != null && first.status() == 200 ? 1 : 0;
            }
            Map<String, Long> records = Bench.await(db.countBy(
                    "SELECT order_no, COUNT(*) FROM payments WHERE merchant_id = ? GROUP BY order_no", merchant));
            long[] charges = ledgerCharges(api, orders, i -> "o" + i);
            int oneRecord = 0;
            int oneCharge = 0;
            long maxRecords = 0;
            long maxCharges = 0;
            for (int i = 0; i < orders; i++) {
                long r = records.getOrDefault("o" + i, 0L);
                oneRecord += r == 1 ? 1 : 0;
                maxRecords = Math.max(maxRecords, r);
                oneCharge += charges[i] == 1 ? 1 : 0;
                maxCharges = Math.max(maxCharges, charges[i]);
            }
            int total = orders * copies;
            double identicalPct = 100.0 * identical / total;
            JsonObject summary = Result.latency(new JsonObject().put("scenario", "storm")
                    .put("orders", orders).put("copies", copies).put("c", copies * ordersAtOnce).put("n", total)
                    .put("tput", Result.round(total * 1e9 / elapsed, 1)), latency)
                    .put("statuses", statusJson(statuses))
                    .put("identical_pct", Result.round(identicalPct, 2))
                    .put("orders_first_paid", firstPaid)
                    .put("orders_one_record", oneRecord).put("max_records_per_order", maxRecords)
                    .put("orders_one_charge", oneCharge).put("max_charges_per_order", maxCharges);
            List<String> checks = new ArrayList<>(List.of(
                    check(identical == total, String.format("%.2f%% of %d answers identical to their order's first"
                            + " (status and body) %s; %d of %d orders paid", identicalPct, total, statuses, firstPaid,
                            orders)),
                    check(oneRecord == orders, oneRecord + " of " + orders + " orders have exactly 1 payment record"
                            + " (max " + maxRecords + ")"),
                    check(oneCharge == orders, oneCharge + " of " + orders + " orders have exactly 1 ledger charge"
                            + " (max " + maxCharges + ")")));
            clusterFigures(summary, checks, galera, "order");
            return new Result("storm " + orders + "x" + copies, summary, latency, checks, usage);
        } finally {
            api.close();
        }
    }

    /** Fires every copy of orders {@code [from, to)} in one event-loop turn; completes when all answered. */
    private Future<Void> burst(PayApi api, String[] tokens, int from, int to, int copies, Answer[][] answers,
            Histogram latency, long[] arrivals) {
        Promise<Void> done = Promise.promise();
        int[] remaining = { (to - from) * copies };
        for (int o = from; o < to; o++) {
            int order = o;
            Buffer body = PayApi.payBody("o" + o, "r" + o);
            for (int k = 0; k < copies; k++) {
                int copy = k;
                long sentAt = System.nanoTime();
                api.payOn(copy, tokens[o], body).onComplete(ar -> {
                    latency.recordValue((System.nanoTime() - sentAt) / 1000);
                    answers[order][copy] = ar.succeeded()
                            ? new Answer(ar.result().statusCode(), ar.result().body(), PayApi.replayed(ar.result()),
                                    arrivals[0]++)
                            : new Answer(-1, null, false, arrivals[0]++);
                    if (--remaining[0] == 0) {
                        done.complete();
                    }
                });
            }
        }
        return done.future();
    }

    /**
     * Duplicates that arrive while the first copy's charge is still running: the first is sent, then
     * {@code waiters} copies {@code delayMs} later; each waiter's wake-up latency is the time between the
     * first copy's answer arriving and its own. {@code roundsAtOnce} rounds run together (distinct orders).
     */
    Result waits(int rounds, int waiters, int roundsAtOnce, long chargeMs, long delayMs) {
        String merchant = merchant("wait");
        PayApi api = PayApi.connect(vertx, ports, roundsAtOnce * (waiters + 1), merchant);
        PayApi warmApi = api.as(merchant + "_warm");
        try {
            int warmRounds = Math.min(2, roundsAtOnce);
            String[] warmTokens = createOrdersAndTokens(warmApi, warmRounds);
            Bench.await(api.sandboxLatency(chargeMs / 5, warmRounds));
            Bench.await(Bench.onLoop(context, () -> waitRounds(warmApi, warmTokens, 0, warmRounds, waiters, delayMs,
                    new Answer[warmRounds][waiters + 1], new long[warmRounds][waiters + 1])));
            Bench.await(api.sandboxLatency(0, 0));

            String[] tokens = createOrdersAndTokens(api, rounds);
            Answer[][] answers = new Answer[rounds][waiters + 1];
            long[][] arrivedAt = new long[rounds][waiters + 1];
            CpuMeter.Sample start = cpu.sample();
            for (int from = 0; from < rounds; from += roundsAtOnce) {
                int batchFrom = from;
                int batchTo = Math.min(rounds, from + roundsAtOnce);
                Bench.await(api.sandboxLatency(chargeMs, batchTo - batchFrom));
                try {
                    Bench.await(Bench.onLoop(context, () -> waitRounds(api, tokens, batchFrom, batchTo, waiters,
                            delayMs, answers, arrivedAt)));
                } finally {
                    Bench.await(api.sandboxLatency(0, 0));
                }
            }
            CpuMeter.Usage usage = cpu.since(start);

            Histogram wakeUp = ClosedLoop.histogram();
            Histogram spread = ClosedLoop.histogram();
            long earliestSigned = Long.MAX_VALUE;
            long latestSigned = Long.MIN_VALUE;
            Histogram firsts = ClosedLoop.histogram();
            Histogram waiting = ClosedLoop.histogram();
            int early = 0;
            int identical = 0;
            int replayed = 0;
            int waited = 0;
            int firstPaid = 0;
            Map<Integer, Integer> statuses = new TreeMap<>();
            for (int r = 0; r < rounds; r++) {
                Answer first = answers[r][0];
                firstPaid += first.status() == 200 ? 1 : 0;
                firsts.recordValue(first.arrival() / 1000);
                long earliestAnswer = arrivedAt[r][0];
                for (int k = 1; k <= waiters; k++) {
                    earliestAnswer = Math.min(earliestAnswer, arrivedAt[r][k]);
                }
                for (int k = 1; k <= waiters; k++) {
                    Answer a = answers[r][k];
                    statuses.merge(a.status(), 1, Integer::sum);
                    waiting.recordValue(a.arrival() / 1000);
                    long micros = (arrivedAt[r][k] - arrivedAt[r][0]) / 1000;
                    if (micros < 0) {
                        early++;
                    }
                    earliestSigned = Math.min(earliestSigned, micros);
                    latestSigned = Math.max(latestSigned, micros);
                    wakeUp.recordValue(Math.max(0, micros));
                    spread.recordValue((arrivedAt[r][k] - earliestAnswer) / 1000);
                    identical += a.sameAs(first) ? 1 : 0;
                    replayed += a.replayed() ? 1 : 0;
                    // sent delayMs after the first, whose charge takes chargeMs: a stored answer found at once
                    // would come back in milliseconds, a waiter's only after the rest of the charge
                    waited += a.arrival() >= (chargeMs - delayMs) * 1_000_000 / 2 ? 1 : 0;
                }
            }
            int total = rounds * waiters;
            JsonObject summary = Result.latency(new JsonObject().put("scenario", "wait").put("rounds", rounds)
                    .put("waiters", waiters).put("c", roundsAtOnce * (waiters + 1)).put("charge_ms", chargeMs).put("delay_ms", delayMs).put("n", total),
                    wakeUp)
                    .put("statuses", statusJson(statuses))
                    .put("answered_before_first", early)
                    .put("identical_pct", Result.round(100.0 * identical / total, 2))
                    .put("replayed_pct", Result.round(100.0 * replayed / total, 2))
                    .put("waited", waited)
                    .put("signed_min_ms", Result.ms(earliestSigned)).put("signed_max_ms", Result.ms(latestSigned))
                    .put("spread_p50_ms", Result.ms(spread.getValueAtPercentile(50)))
                    .put("spread_p99_ms", Result.ms(spread.getValueAtPercentile(99)))
                    .put("spread_max_ms", Result.ms(spread.getMaxValue()))
                    .put("first_p50_ms", Result.ms(firsts.getValueAtPercentile(50)))
                    .put("first_max_ms", Result.ms(firsts.getMaxValue()))
                    .put("waiter_p50_ms", Result.ms(waiting.getValueAtPercentile(50)))
                    .put("waiter_max_ms", Result.ms(waiting.getMaxValue()))
                    .put("firsts_paid", firstPaid);
            List<String> checks = List.of(
                    check(identical == total, identical + " of " + total + " waiters got the first answer"
                            + " (status and body) " + statuses + ", " + replayed + " marked Idempotent-Replayed; "
                            + firstPaid + " of " + rounds + " firsts paid"),
                    check(waited == total, waited + " of " + total + " waiters were answered after the first's"
                            + " charge ended, i.e. they waited rather than found a stored answer"),
                    String.format(Locale.ROOT, "wake-up = waiter's answer minus the first's answer: %d of %d waiters"
                            + " were answered before the first copy (counted as 0; signed range %.2f to %.2f ms);"
                            + " wake-up spread (waiter minus the earliest answer of its round, the plot's line):"
                            + " p50 %.2f, p99 %.2f, max %.2f ms; first copy's own latency p50 %.0f ms for a %d ms charge",
                            early, total, earliestSigned / 1000.0, latestSigned / 1000.0,
                            spread.getValueAtPercentile(50) / 1000.0, spread.getValueAtPercentile(99) / 1000.0,
                            spread.getMaxValue() / 1000.0, firsts.getValueAtPercentile(50) / 1000.0, chargeMs));
            return new Result("wait " + rounds + "x" + waiters, summary, wakeUp, checks, usage, spread);
        } finally {
            api.close();
        }
    }

    private Future<Void> waitRounds(PayApi api, String[] tokens, int from, int to, int waiters, long delayMs,
            Answer[][] answers, long[][] arrivedAt) {
        Promise<Void> done = Promise.promise();
        int[] remaining = { (to - from) * (waiters + 1) };
        for (int r = from; r < to; r++) {
            int round = r;
            Buffer body = PayApi.payBody("o" + r, "r" + r);
            sendCopy(api, tokens[r], body, answers, arrivedAt, round, 0, remaining, done);
            vertx.setTimer(delayMs, id -> {
                for (int k = 1; k <= waiters; k++) {
                    sendCopy(api, tokens[round], body, answers, arrivedAt, round, k, remaining, done);
                }
            });
        }
        return done.future();
    }

    private void sendCopy(PayApi api, String token, Buffer body, Answer[][] answers, long[][] arrivedAt, int round,
            int copy, int[] remaining, Promise<Void> done) {
        long sentAt = System.nanoTime();
        api.payOn(copy, token, body).onComplete(ar -> {
            arrivedAt[round][copy] = System.nanoTime();
            // the arrival field holds the copy's own latency here: the wait has no arrival order to keep
            long own = arrivedAt[round][copy] - sentAt;
            answers[round][copy] = ar.succeeded()
                    ? new Answer(ar.result().statusCode(), ar.result().body(), PayApi.replayed(ar.result()), own)
                    : new Answer(-1, null, false, own);
            if (--remaining[0] == 0) {
                done.complete();
            }
        });
    }

    private void createOrders(PayApi api, int n, int concurrency) {
        ClosedLoop.Run run = Bench.await(ClosedLoop.run(context, n, Math.max(SETUP_CONCURRENCY, concurrency),
                SETUP_LIMIT_MS, i -> api.requireOrder("o" + i).map(v -> true)));
        if (run.completed() != n || run.failed() > 0) {
            throw new IllegalStateException("set-up created " + run.completed() + " of " + n + " orders: "
                    + run.firstFailure());
        }
    }

    private String[] createOrdersAndTokens(PayApi api, int n) {
        createOrders(api, n, SETUP_CONCURRENCY);
        String[] tokens = new String[n];
        ClosedLoop.Run run = Bench.await(ClosedLoop.run(context, n, SETUP_CONCURRENCY, SETUP_LIMIT_MS,
                i -> api.issueToken().map(t -> {
                    tokens[i] = t;
                    return true;
                })));
        if (run.completed() != n || run.failed() > 0) {
            throw new IllegalStateException("set-up issued " + run.completed() + " of " + n + " tokens: "
                    + run.firstFailure());
        }
        return tokens;
    }

    /** Charges per order from the sandbox's public ledger endpoint; -1 where it could not be read. */
    private long[] ledgerCharges(PayApi api, int n, IntFunction<String> orderNo) {
        long[] charges = new long[n];
        Arrays.fill(charges, -1);
        Bench.await(ClosedLoop.run(context, n, SETUP_CONCURRENCY, SETUP_LIMIT_MS, i -> api.ledger(orderNo.apply(i))
                .map(ledger -> {
                    charges[i] = ledger.getLong("charges", -1L);
                    return true;
                })));
        return charges;
    }

    /** On a cluster, what it did for the scenario: its BENCH line's {@code galera} member and a line of its checks. */
    private static void clusterFigures(JsonObject summary, List<String> checks, JsonObject galera, String perWhat) {
        if (galera != null) {
            summary.put("galera", galera);
            checks.add(ClusterCounters.describe(galera, perWhat));
        }
    }

    private static JsonObject perPayment(Map<String, Long> rows, int payments) {
        JsonObject out = new JsonObject();
        new TreeMap<>(rows).forEach((table, changed) -> out.put(table,
                payments == 0 ? 0 : Result.round((double) changed / payments, 2)));
        return out;
    }

    private static JsonObject statusJson(Map<Integer, Integer> statuses) {
        JsonObject out = new JsonObject();
        statuses.forEach((status, count) -> out.put(String.valueOf(status), count));
        return out;
    }

    private static String errors(ClosedLoop.Run run) {
        return (run.failed() > 0 ? "; " + run.failed() + " transport errors, first: " + run.firstFailure() : "")
                + (run.timedOut() ? "; stopped at the time limit after " + run.started() + " requests" : "");
    }

    static String check(boolean ok, String what) {
        return (ok ? "ok   " : "FAIL ") + what;
    }

    static String label(String scenario, long sandboxMs, int concurrency) {
        return scenario + " " + sandboxMs + "ms C=" + concurrency;
    }
}
