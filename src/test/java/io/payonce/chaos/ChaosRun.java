package io.payonce.chaos;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.payonce.chaos.Checker.Violation;

/**
 * One chaos run from start to verdict: the deployment started, the clients paying while the schedule's
 * faults happen, then every fault healed, the clients' last requests done, reconciliation given its time,
 * every request sent once more with its own key, every answer owed on the queue sent and heard, and the books
 * checked.
 */
final class ChaosRun {

    /** Reconciliation's longest path: a charge pending past give-up-after, a backoff of a few postponements, a close. */
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(150);
    private static final Duration CLIENTS_BOUND = Duration.ofSeconds(90);
    private static final Duration FINAL_PER_REQUEST = Duration.ofSeconds(45);
    private static final Duration FINAL_BOUND = Duration.ofMinutes(5);
    /**
     * A run counts as settled when nothing is unsettled twice this far apart: a queue command held for its retry
     * delay (2 s) before it is returned to the queue is in neither the queue nor the tables meanwhile.
     */
    private static final Duration QUIET = Duration.ofSeconds(3);

    /** The verdict: the violations found, and what went wrong in the harness itself (then nothing was judged fully). */
    record Result(ChaosSettings settings, List<Violation> violations, List<String> harnessErrors, String report) {

        boolean clean() {
            return violations.isEmpty() && harnessErrors.isEmpty();
        }

        /** 0 clean, 1 violations, 2 the harness could not judge the run. */
        int exitCode() {
            return !violations.isEmpty() ? 1 : harnessErrors.isEmpty() ? 0 : 2;
        }
    }

    private ChaosRun() {
    }

    static Result run(ChaosSettings settings) throws Exception {
        String missing = Deployment.missingTools();
        if (missing != null) {
            throw new IllegalStateException(missing);
        }
        FaultSchedule schedule = FaultSchedule.draw(settings.seed(), settings.traffic().toMillis(), settings.instances(),
                settings.merchantIds());
        log("seed " + settings.seed() + ": " + schedule.faults().size() + " faults drawn for "
                + settings.traffic().toSeconds() + " s of traffic");
        Map<String, Double> timings = new LinkedHashMap<>();
        long started = System.nanoTime();
        try (Deployment deployment = new Deployment(settings)) {
            log("starting MariaDB database " + settings.dbName() + " anew, Redis, the sandbox and " + settings.instances()
                    + " instances behind nginx");
            deployment.start();
            started = lap(timings, "start-up", started);
            History history = new History();
            Traffic traffic = new Traffic(deployment, history);
            Clients clients = new Clients(settings, traffic, history);
            FaultInjector faults = new FaultInjector(deployment, history, settings.merchantIds());
            try (traffic) {
                long trafficMs = settings.traffic().toMillis();
                faults.start(schedule);
                clients.start(trafficMs);
                while (history.nowMs() < trafficMs) {
                    Thread.sleep(Math.min(10_000, trafficMs - history.nowMs()));
                    log(String.format("%5.0f s: %d requests, %d queue commands, %d faults injected",
                            history.nowMs() / 1000.0, history.requests().size(),
                            history.requests().stream().mapToInt(r -> r.queueCopies().size()).sum(),
                            faults.injected().values().stream().mapToInt(n -> n).sum()));
                }
                started = lap(timings, "traffic", started);
                log("healing every fault");
                faults.healAll();
                started = lap(timings, "heal", started);
                if (!clients.awaitClients(CLIENTS_BOUND)) {
                    log("some clients were still sending after " + CLIENTS_BOUND.toSeconds() + " s");
                }
                clients.stopComebacks();
                started = lap(timings, "last requests", started);
                String unsettled = awaitSettled(deployment);
                started = lap(timings, "settle", started);
                log("final round: every request once more with its own key");
                clients.finalRound(FINAL_PER_REQUEST, FINAL_BOUND);
                started = lap(timings, "final round", started);
                unsettled = awaitSettled(deployment);
                started = lap(timings, "settle again", started);
                traffic.hearLateAnswers();
                log("checking " + history.requests().size() + " requests and " + history.refunds().size()
                        + " refunds against the books");
                Books books = Books.read(deployment, history.requests(), history.refunds());
                List<Violation> violations = Checker.check(settings, history, books);
                lap(timings, "check", started);
                List<String> harness = new ArrayList<>(faults.errors());
                harness.addAll(books.errors);
                harness.addAll(traffic.errors());
                if (unsettled != null) {
                    harness.add("still unsettled after " + SETTLE_BOUND.toSeconds() + " s: " + unsettled);
                }
                List<String> notes = deployment.mysqlLostTrack().stream()
                        .map(lost -> "a MySQL proxy could not follow (no COMMIT held there): " + lost).toList();
                String report = Report.of(settings, schedule, history, faults, clients, books, violations, harness,
                        notes, timings);
                return new Result(settings, violations, harness, report);
            } finally {
                clients.close();
                faults.close();
            }
        }
    }

    /**
     * Waits until nothing is in flight any more, seen so twice {@link #QUIET} apart; answers what still is at the
     * bound, or null.
     */
    private static String awaitSettled(Deployment deployment) throws Exception {
        long deadline = System.nanoTime() + SETTLE_BOUND.toNanos();
        String unsettled = Books.unsettled(deployment);
        long lastLog = System.nanoTime();
        boolean quietOnce = false;
        while (System.nanoTime() < deadline) {
            if (unsettled == null) {
                if (quietOnce) {
                    return null;
                }
                quietOnce = true;
                Thread.sleep(QUIET.toMillis());
            } else {
                quietOnce = false;
                if (System.nanoTime() - lastLog > Duration.ofSeconds(10).toNanos()) {
                    log("settling: " + unsettled);
                    lastLog = System.nanoTime();
                }
                Thread.sleep(500);
            }
            unsettled = Books.unsettled(deployment);
        }
        return unsettled;
    }

    private static long lap(Map<String, Double> timings, String phase, long sinceNanos) {
        long now = System.nanoTime();
        timings.put(phase, (now - sinceNanos) / 1e9);
        return now;
    }

    static void log(String message) {
        System.err.println("chaos: " + message);
        System.err.flush();
    }
}
