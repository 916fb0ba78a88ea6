package io.payonce.chaos;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.payonce.chaos.FaultSchedule.Fault;
import io.payonce.chaos.FaultSchedule.Kind;
import io.payonce.chaos.History.FaultWindow;
import io.payonce.support.AppProcess;
import io.payonce.support.MysqlProxy;
import io.payonce.support.MysqlProxy.Hold;
import io.payonce.support.PayClient;
import io.payonce.support.TcpProxy;

/**
 * Applies the schedule's faults at their times, each healed after its span: an instance started again and
 * ready, or resumed, a proxy forwarding again (an instance's way to the broker included, and the MySQL proxies
 * passing the outbox's statements again), Redis restarted empty, a held COMMIT passed on, the broker node
 * started again and ready. {@link #healAll()}
 * ends the schedule and heals what is still faulty at once (and resets every merchant's sandbox behaviour), so
 * that the run can settle.
 */
final class FaultInjector {

    /** What a charge call to the sandbox starts with, on the wire. */
    private static final String CHARGE = "POST /sandbox/charges ";
    /** The sandbox behaviours' operations. */
    private static final String CHARGE_OPERATION = "charge";
    private static final String REFUND = "refund";
    /** A marker no request contains: arming it takes back a cut that never fired. */
    private static final String NOTHING = "chaos: no request contains this";
    /** How long an owner's pause waits for an opening on its instance before it stops the instance anyway. */
    private static final long OPENING_BOUND_MS = 3_000;
    /** The one statement of an undo: only an opener whose charge the channel refused deletes its record. */
    private static final String UNDO = "(?is)^\\s*DELETE\\b.*\\bFROM\\s+payments\\b";
    /** Every statement that reads or writes the queue entrance's outbox. */
    private static final String OUTBOX = "(?i)\\bqueue_outbox\\b";
    /** ER_LOCK_WAIT_TIMEOUT: what a server too busy to take a statement answers. */
    private static final int LOCK_WAIT_TIMEOUT = 1205;

    private final Deployment deployment;
    private final History history;
    private final List<String> merchants;
    private final ScheduledExecutorService timer = Executors.newScheduledThreadPool(2, daemon("chaos-heal"));
    private final ExecutorService restarts = Executors.newCachedThreadPool(daemon("chaos-restart"));
    private final Map<Runnable, Boolean> pendingHeals = new ConcurrentHashMap<>();
    private final List<Future<?>> restarting = new ArrayList<>();
    /** Instance i is down, restarting or paused: no other instance fault takes it, and it is not counted up. */
    private final AtomicBoolean[] down;
    /** Instance i is stopped by SIGSTOP; guarded by {@code this}, with {@link #over}, so that no pause outlives healAll. */
    private final boolean[] paused;
    private final Map<String, Integer> injected = new TreeMap<>();
    private final List<String> errors = new ArrayList<>();
    private volatile boolean over;
    private Thread runner;

    FaultInjector(Deployment deployment, History history, List<String> merchants) {
        this.deployment = deployment;
        this.history = history;
        this.merchants = merchants;
        this.down = new AtomicBoolean[deployment.instances().size()];
        this.paused = new boolean[down.length];
        for (int i = 0; i < down.length; i++) {
            down[i] = new AtomicBoolean();
        }
    }

    void start(FaultSchedule schedule) {
        runner = new Thread(() -> run(schedule), "chaos-faults");
        runner.setDaemon(true);
        runner.start();
    }

    private void run(FaultSchedule schedule) {
        try {
            for (Fault fault : schedule.faults()) {
                // in short steps, so that healAll() never interrupts a fault half applied
                while (!over && history.nowMs() < fault.atMs()) {
                    Thread.sleep(Math.min(100, Math.max(1, fault.atMs() - history.nowMs())));
                }
                if (over) {
                    return;
                }
                try {
                    apply(fault);
                } catch (RuntimeException | java.io.IOException e) {
                    error(fault.describe() + ": " + e);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void apply(Fault fault) throws InterruptedException, java.io.IOException {
        switch (fault.kind()) {
            case KILL_INSTANCE, TERMINATE_INSTANCE -> stopInstance(fault);
            case OWNER_PAUSED -> pauseOwner(fault);
            case REDIS_KILLED -> {
                FaultWindow window = started(fault);
                if (!deployment.killRedis()) {
                    error("no redis-server of this run to kill");
                }
                healLater(fault, window, () -> {
                    try {
                        deployment.restartRedis();
                    } catch (Exception e) {
                        error("restarting Redis: " + e);
                    }
                });
            }
            case REDIS_FLUSHED -> {
                started(fault).end(history.nowMs());
                deployment.flushRedis();
            }
            case REDIS_SLOW -> {
                FaultWindow window = started(fault);
                deployment.redisProxy().delay(fault.latencyMs());
                healLater(fault, window, () -> deployment.redisProxy().delay(0));
            }
            case REDIS_STALLED -> {
                FaultWindow window = started(fault);
                deployment.redisProxy().hang();
                healLater(fault, window, () -> deployment.redisProxy().restore());
            }
            case REDIS_PARTITIONED -> {
                FaultWindow window = started(fault);
                deployment.redisProxy().hang();
                // when a partition heals, the connections it held have been given up by both ends
                healLater(fault, window, () -> {
                    deployment.redisProxy().cut();
                    deployment.redisProxy().restore();
                });
            }
            case MYSQL_RESET -> {
                FaultWindow window = started(fault);
                deployment.mysql().forEach(MysqlProxy::cut);
                healLater(fault, window, () -> deployment.mysql().forEach(MysqlProxy::restore));
            }
            case MYSQL_BLACK_HOLE -> {
                FaultWindow window = started(fault);
                deployment.mysql().forEach(MysqlProxy::hang);
                healLater(fault, window, () -> deployment.mysql().forEach(MysqlProxy::restore));
            }
            case MYSQL_LATE_COMMIT, MYSQL_LATE_COMMIT_ANSWER -> holdCommit(fault);
            case MYSQL_UNDO_COMMIT_ANSWER_LATE -> holdUndoCommit(fault);
            case MYSQL_OUTBOX_REFUSED -> {
                FaultWindow window = started(fault);
                deployment.mysql().forEach(way -> way.refuse(OUTBOX, LOCK_WAIT_TIMEOUT));
                healLater(fault, window, () -> window.note(deployment.mysql().stream()
                        .mapToInt(MysqlProxy::stopRefusing).sum() + " statement(s) refused"));
            }
            case CHANNEL_CHARGE_LOST -> {
                FaultWindow window = started(fault);
                // the next charge never reaches the channel, and the connections on the way are reset
                deployment.channelPath().cutInsteadOfNext(CHARGE);
                healLater(fault, window, () -> {
                    deployment.channelPath().cutInsteadOfNext(NOTHING);
                    deployment.channelPath().restore();
                });
            }
            case CHANNEL_PARTITIONED -> {
                FaultWindow window = started(fault);
                deployment.channelPath().hang();
                healLater(fault, window, () -> {
                    deployment.channelPath().cut();
                    deployment.channelPath().restore();
                });
            }
            case BROKER_CUT -> {
                FaultWindow window = started(fault);
                TcpProxy way = deployment.brokerWays().get(fault.instance());
                way.cut();
                healLater(fault, window, way::restore);
            }
            case BROKER_NODE_KILLED -> {
                FaultWindow window = started(fault);
                deployment.brokerNode().kill9();
                healLater(fault, window, () -> startBroker(window));
            }
            default -> {
                started(fault).end(history.nowMs());
                String mode = switch (fault.kind()) {
                    case SANDBOX_SLOW, SANDBOX_REFUND_SLOW -> "ok";
                    case SANDBOX_DECLINE, SANDBOX_REFUND_DECLINE -> "decline";
                    case SANDBOX_REFUSE, SANDBOX_REFUND_REFUSE -> "fail_before_accept";
                    default -> "timeout_after_accept";
                };
                behave(fault.merchant(), fault.kind().onRefunds() ? REFUND : CHARGE_OPERATION, mode, fault.latencyMs(),
                        fault.count());
            }
        }
    }

    /** The merchant's next {@code count} charges or refunds ({@code operation}) take {@code mode} after {@code latencyMs}. */
    private void behave(String merchant, String operation, String mode, long latencyMs, int count) {
        deployment.channel(merchant).call(Duration.ofSeconds(5))
                .body(Map.of("operation", operation, "mode", mode, "latency_ms", latencyMs, "count", count))
                .put("/sandbox/behavior").then().statusCode(200);
    }

    /** SIGKILL or SIGTERM; the instance is started again once its span is over, and counts as up once ready. */
    private void stopInstance(Fault fault) throws InterruptedException {
        int i = fault.instance();
        if (!takeInstance(fault)) {
            return;
        }
        AppProcess app = deployment.instances().get(i);
        FaultWindow window = started(fault);
        if (fault.kind() == Kind.KILL_INSTANCE) {
            app.kill();
        } else {
            app.terminate();
            restarts.submit(() -> {
                try {
                    if (!app.awaitExit(Duration.ofSeconds(15))) {
                        window.note("did not stop within 15 s, killed");
                        app.kill();
                    } else {
                        window.note("exited with " + app.exitValue());
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
        healLater(fault, window, () -> restart(i, window));
    }

    /** Marks the fault's instance down; false (and the fault skipped) when it is already, or is the only one up. */
    private boolean takeInstance(Fault fault) {
        int i = fault.instance();
        int up = 0;
        for (AtomicBoolean d : down) {
            up += d.get() ? 0 : 1;
        }
        if (down[i].get() || up < 2) {
            history.faultSkipped(fault, down[i].get() ? "still restarting or paused" : "the only instance up");
            return false;
        }
        down[i].set(true);
        return true;
    }

    /**
     * An owner paused past its lease: every merchant's next charge is made slower (those with a behaviour of
     * their own set keep it), then, once the instance has run an opening, it is stopped (SIGSTOP) a quarter of
     * that later, most likely with that owner inside its charge, for longer than the lease and reconciliation's
     * min-age, so that another instance takes its payment over; then it goes on (SIGCONT) where it stood.
     */
    private void pauseOwner(Fault fault) {
        int i = fault.instance();
        if (!takeInstance(fault)) {
            return;
        }
        try {
            nextChargeOfIdleMerchants("ok", fault.latencyMs());
        } catch (RuntimeException | AssertionError e) {
            down[i].set(false);
            throw new IllegalStateException("slowing the channel down: " + e, e);
        }
        int before = deployment.openings(i);
        restarts.submit(() -> {
            try {
                long deadline = history.nowMs() + OPENING_BOUND_MS;
                while (deployment.openings(i) == before && history.nowMs() < deadline && !over) {
                    Thread.sleep(2);
                }
                boolean opened = deployment.openings(i) != before;
                Thread.sleep(fault.latencyMs() / 4);
                synchronized (this) {
                    if (!over) {
                        deployment.instances().get(i).pause();
                        paused[i] = true;
                        FaultWindow window = started(fault);
                        if (!opened) {
                            window.note("no opening there within " + OPENING_BOUND_MS + " ms");
                        }
                        healLater(fault, window, () -> resume(i));
                    }
                }
            } catch (Exception | AssertionError e) {
                error("pausing instance #" + i + ": " + e);
            } finally {
                synchronized (this) {
                    if (!paused[i]) {
                        down[i].set(false);
                    }
                }
            }
            return null;
        });
    }

    /** The next charge of every merchant with no behaviour of its own left takes {@code mode} after {@code latencyMs}. */
    private void nextChargeOfIdleMerchants(String mode, long latencyMs) {
        for (String merchant : merchants) {
            PayClient channel = deployment.channel(merchant);
            if (channel.call(Duration.ofSeconds(5)).get("/sandbox/behavior").jsonPath().getInt("count") == 0) {
                channel.sandbox(mode, latencyMs, 1);
            }
        }
    }

    /** SIGCONT to a paused instance; it counts as up again. */
    private synchronized void resume(int i) {
        if (!paused[i]) {
            return;
        }
        try {
            deployment.instances().get(i).resume();
            paused[i] = false;
            down[i].set(false);
        } catch (Exception | AssertionError e) {
            error("resuming instance #" + i + ": " + e);
        }
    }

    /**
     * A COMMIT reaching MySQL late, or its answer reaching the instance late: the next COMMIT on the instance's
     * way to MySQL (most likely an opening's: the other writes are single statements) is held longer than the
     * database timeout. The fault lasts from the arming until what was held has been passed on; a hold that
     * catches no COMMIT in time is taken back and counted as skipped.
     */
    private void holdCommit(Fault fault) {
        if (down[fault.instance()].get()) {
            history.faultSkipped(fault, "its instance down or paused");
            return;
        }
        MysqlProxy way = deployment.mysql().get(fault.instance());
        FaultWindow window = history.faultStarted(fault);
        Duration length = Duration.ofMillis(fault.lastsMs());
        Hold hold = fault.kind() == Kind.MYSQL_LATE_COMMIT ? way.holdNextCommit(length) : way.holdNextCommitAnswer(length);
        awaitCatch(fault, window, Map.of(way, hold), "COMMIT");
    }

    /**
     * An undo's COMMIT answered late: on every instance's way to MySQL, the answer to the next COMMIT of a
     * transaction that deletes a payment record (an undo, nothing else does) is held longer than the database
     * timeout; then the merchant's next charge, and that of every merchant with no behaviour of its own left, is
     * refused by the channel after a moment, so that its opener undoes its opening, wherever it runs. The first
     * hold to catch an undo's COMMIT is the fault; the others are taken back.
     */
    private void holdUndoCommit(Fault fault) {
        FaultWindow window = history.faultStarted(fault);
        Duration length = Duration.ofMillis(fault.lastsMs());
        Map<MysqlProxy, Hold> holds = new java.util.LinkedHashMap<>();
        deployment.mysql().forEach(way -> holds.put(way, way.holdNextCommitAnswerAfter(UNDO, length)));
        behave(fault.merchant(), CHARGE_OPERATION, "fail_before_accept", fault.latencyMs(), fault.count());
        nextChargeOfIdleMerchants("fail_before_accept", fault.latencyMs());
        awaitCatch(fault, window, holds, "undo's COMMIT");
    }

    /**
     * The fault is counted once one of {@code holds} caught what it was armed for, the others then taken back, and
     * ends once what was caught has been passed on; when nothing was caught within the catch span, every hold is
     * taken back and the fault counted as skipped.
     */
    private void awaitCatch(Fault fault, FaultWindow window, Map<MysqlProxy, Hold> holds, String what) {
        CompletableFuture<Object> caught = CompletableFuture.anyOf(holds.values().stream().map(Hold::caught)
                .toArray(CompletableFuture[]::new));
        caught.thenRun(() -> {
            counted(fault);
            int on = 0;
            for (Map.Entry<MysqlProxy, Hold> hold : holds.entrySet()) {
                if (hold.getValue().caught().isDone()) {
                    on = deployment.mysql().indexOf(hold.getKey());
                } else {
                    hold.getKey().disarm();
                }
            }
            window.note("caught on #" + on + " " + (history.nowMs() - window.startMs) + " ms after it was armed");
        });
        // over once every hold that caught something has passed it on
        holds.values().forEach(hold -> hold.released().thenRun(() -> {
            if (holds.values().stream().filter(h -> h.caught().isDone()).allMatch(h -> h.released().isDone())) {
                window.end(history.nowMs());
            }
        }));
        healAfter(FaultSchedule.COMMIT_CATCH_MS, () -> {
            if (!caught.isDone()) {
                holds.keySet().forEach(MysqlProxy::disarm);
                // a hold caught between the look and the disarm runs its length, and is counted
                if (!caught.isDone()) {
                    window.note("no " + what + " came");
                    window.end(history.nowMs());
                    history.faultSkipped(fault, "no " + what + " came within " + FaultSchedule.COMMIT_CATCH_MS + " ms");
                }
            }
        });
    }

    /** Starts the killed broker node again; the fault ends once it is ready. */
    private void startBroker(FaultWindow window) {
        synchronized (restarting) {
            restarting.add(restarts.submit(() -> {
                try {
                    deployment.brokerNode().startAgain();
                    window.end(history.nowMs());
                } catch (Exception | AssertionError e) {
                    error("starting the broker node again: " + e);
                }
                return null;
            }));
        }
    }

    private void restart(int i, FaultWindow window) {
        synchronized (restarting) {
            restarting.add(restarts.submit(() -> {
                AppProcess app = deployment.instances().get(i);
                try {
                    // a terminated instance may still be finishing its requests: it is started once it has exited
                    if (app.isAlive() && !app.awaitExit(Duration.ofSeconds(20))) {
                        app.kill();
                    }
                    deployment.restart(i);
                    window.end(history.nowMs());
                    down[i].set(false);
                } catch (Exception | AssertionError e) {
                    error("restarting instance #" + i + ": " + e);
                }
                return null;
            }));
        }
    }

    /** Ends the schedule, heals every fault still in force, waits for restarted instances, and resets the channel. */
    void healAll() throws InterruptedException {
        synchronized (this) {
            over = true;
        }
        if (runner != null) {
            runner.join(60_000);
        }
        for (Runnable heal : List.copyOf(pendingHeals.keySet())) {
            heal.run();
        }
        for (int i = 0; i < down.length; i++) {
            resume(i);
        }
        for (MysqlProxy way : deployment.mysql()) {
            way.disarm();
            way.stopRefusing();
            way.restore();
        }
        deployment.channelPath().cutInsteadOfNext(NOTHING);
        deployment.channelPath().restore();
        deployment.brokerWays().forEach(TcpProxy::restore);
        deployment.redisProxy().delay(0);
        deployment.redisProxy().restore();
        try {
            deployment.restartRedis();
        } catch (java.io.IOException e) {
            error("restarting Redis: " + e);
        }
        List<Future<?>> waiting;
        synchronized (restarting) {
            waiting = List.copyOf(restarting);
        }
        try {
            deployment.brokerNode().startAgain();
        } catch (RuntimeException | AssertionError e) {
            error("starting the broker node at the end: " + e);
        }
        for (Future<?> restart : waiting) {
            try {
                restart.get(120, TimeUnit.SECONDS);
            } catch (Exception e) {
                error("waiting for a restart: " + e);
            }
        }
        for (int i = 0; i < down.length; i++) {
            if (!deployment.instances().get(i).isAlive()) {
                try {
                    deployment.restart(i);
                    down[i].set(false);
                } catch (Exception | AssertionError e) {
                    error("restarting instance #" + i + " at the end: " + e);
                }
            }
        }
        for (String merchant : merchants) {
            behave(merchant, CHARGE_OPERATION, "ok", 0, 0);
            try {
                behave(merchant, REFUND, "ok", 0, 0);
            } catch (RuntimeException | AssertionError e) {
                error("resetting the refund behaviour of " + merchant + ": " + e);
            }
        }
        timer.shutdownNow();
    }

    void close() {
        synchronized (this) {
            over = true;
        }
        timer.shutdownNow();
        restarts.shutdownNow();
    }

    /** Faults applied, by kind. */
    synchronized Map<String, Integer> injected() {
        return new TreeMap<>(injected);
    }

    /** What went wrong in the harness itself while injecting or healing (not a violation of the service's). */
    synchronized List<String> errors() {
        return List.copyOf(errors);
    }

    private synchronized FaultWindow started(Fault fault) {
        counted(fault);
        return history.faultStarted(fault);
    }

    private synchronized void counted(Fault fault) {
        injected.merge(fault.kind().label, 1, Integer::sum);
    }

    /**
     * Runs {@code heal} after the fault's span, or at {@link #healAll()}, whichever comes first; once. The fault
     * ends then, unless it ended a process (an instance, the broker node): that one ends once it is ready again.
     */
    private void healLater(Fault fault, FaultWindow window, Runnable heal) {
        healAfter(fault.lastsMs(), () -> {
            heal.run();
            if (!fault.kind().restarts()) {
                window.end(history.nowMs());
            }
        });
    }

    /** Runs {@code heal} after {@code ms}, or at {@link #healAll()}, whichever comes first; once. */
    private void healAfter(long ms, Runnable heal) {
        AtomicBoolean done = new AtomicBoolean();
        Runnable once = new Runnable() {
            @Override
            public void run() {
                if (done.compareAndSet(false, true)) {
                    pendingHeals.remove(this);
                    heal.run();
                }
            }
        };
        pendingHeals.put(once, Boolean.TRUE);
        timer.schedule(once, ms, TimeUnit.MILLISECONDS);
    }

    private synchronized void error(String message) {
        errors.add(String.format("%.1f s %s", history.nowMs() / 1000.0, message));
    }

    private static java.util.concurrent.ThreadFactory daemon(String name) {
        return body -> {
            Thread thread = new Thread(body, name);
            thread.setDaemon(true);
            return thread;
        };
    }
}
