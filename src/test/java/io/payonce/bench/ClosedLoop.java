package io.payonce.bench;

import java.util.concurrent.TimeUnit;

import org.HdrHistogram.Histogram;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;

/**
 * A closed loop: {@code concurrency} operations in flight, each started when one finishes, until
 * {@code count} operations ran or the time limit passed, whichever comes first. Everything happens on
 * one event-loop context, so the counters and the histogram need no locking.
 */
final class ClosedLoop {

    /** One operation: completes with whether the answer was the expected one, fails on a transport error. */
    interface Operation {
        Future<Boolean> start(int index);
    }

    /** What a loop did; latencies in microseconds. */
    record Run(int started, int completed, int wrong, int failed, long elapsedNanos, Histogram latency,
            boolean timedOut, String firstFailure) {

        double perSecond() {
            return elapsedNanos == 0 ? 0 : completed * 1e9 / elapsedNanos;
        }
    }

    /** Microsecond resolution up to 5 minutes, 3 significant digits. */
    static Histogram histogram() {
        return new Histogram(TimeUnit.MINUTES.toMicros(5), 3);
    }

    private final int count;
    private final int concurrency;
    private final long deadline;
    private final Operation operation;
    private final Histogram latency = histogram();
    private final Promise<Run> done = Promise.promise();
    private Context context;
    private long startedAt;
    private int started;
    private int inFlight;
    private int completed;
    private int wrong;
    private int failed;
    private String firstFailure;
    private boolean finished;

    private ClosedLoop(int count, int concurrency, long timeLimitMillis, Operation operation) {
        this.count = count;
        this.concurrency = concurrency;
        this.deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeLimitMillis);
        this.operation = operation;
    }

    /** Runs the loop on {@code context}; the future completes there, after the last operation finished. */
    static Future<Run> run(Context context, int count, int concurrency, long timeLimitMillis, Operation operation) {
        ClosedLoop loop = new ClosedLoop(count, concurrency, timeLimitMillis, operation);
        loop.context = context;
        context.runOnContext(v -> loop.begin());
        return loop.done.future();
    }

    private void begin() {
        startedAt = System.nanoTime();
        for (int i = 0; i < concurrency && launch(); i++) {
            // each launch keeps one slot busy until the loop is over
        }
        finishIfIdle();
    }

    private boolean launch() {
        if (started >= count || System.nanoTime() >= deadline) {
            return false;
        }
        int index = started++;
        inFlight++;
        long sentAt = System.nanoTime();
        Future<Boolean> op;
        try {
            op = operation.start(index);
        } catch (RuntimeException e) {
            op = Future.failedFuture(e);
        }
        // an operation that failed at once would otherwise recurse here once per remaining operation
        boolean immediate = op.isComplete();
        op.onComplete(ar -> {
            long micros = (System.nanoTime() - sentAt) / 1000;
            inFlight--;
            if (ar.succeeded()) {
                completed++;
                latency.recordValue(Math.min(micros, latency.getHighestTrackableValue()));
                if (!ar.result()) {
                    wrong++;
                }
            } else {
                failed++;
                if (firstFailure == null) {
                    firstFailure = String.valueOf(ar.cause());
                }
            }
            if (immediate) {
                context.runOnContext(v -> {
                    launch();
                    finishIfIdle();
                });
            } else {
                launch();
                finishIfIdle();
            }
        });
        return true;
    }

    private void finishIfIdle() {
        if (inFlight == 0 && !finished) {
            finished = true;
            boolean timedOut = started < count;
            done.complete(new Run(started, completed, wrong, failed, System.nanoTime() - startedAt, latency,
                    timedOut, firstFailure));
        }
    }
}
