package io.payonce.support;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Fires calls at the service at the same instant. Every run is bounded: in threads, in calls, and in
 * time (a barrier that is not filled or a call that does not return in time fails the test).
 */
public final class Concurrently {

    /** One call of a burst: which group it belongs to and which copy of the group it is. */
    @FunctionalInterface
    public interface Call<T> {
        T run(int group, int copy) throws Exception;
    }

    private Concurrently() {
    }

    /**
     * Runs {@code groups} bursts of {@code copies} calls on a pool of {@code threads}; the copies of one
     * group are released together by a barrier of their own. Answers the results as [group][copy].
     */
    public static <T> List<List<T>> bursts(int groups, int copies, int threads, Duration timeout, Call<T> call) {
        if (threads < copies) {
            // a barrier can only open when all its copies hold a thread at once
            throw new IllegalArgumentException("need at least " + copies + " threads, got " + threads);
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<List<Future<T>>> futures = new ArrayList<>();
            for (int g = 0; g < groups; g++) {
                CyclicBarrier start = new CyclicBarrier(copies);
                List<Future<T>> group = new ArrayList<>();
                for (int c = 0; c < copies; c++) {
                    int groupNo = g;
                    int copyNo = c;
                    group.add(pool.submit(() -> {
                        start.await(remaining(deadline), TimeUnit.NANOSECONDS);
                        return call.run(groupNo, copyNo);
                    }));
                }
                futures.add(group);
            }
            List<List<T>> results = new ArrayList<>();
            for (List<Future<T>> group : futures) {
                List<T> answers = new ArrayList<>();
                for (Future<T> future : group) {
                    answers.add(future.get(remaining(deadline), TimeUnit.NANOSECONDS));
                }
                results.add(answers);
            }
            return results;
        } catch (TimeoutException e) {
            throw new AssertionError("concurrent calls did not finish within " + timeout, e);
        } catch (ExecutionException e) {
            throw new AssertionError("a concurrent call failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        } finally {
            pool.shutdownNow();
        }
    }

    /** {@code copies} calls released together, each on its own thread. */
    public static <T> List<T> all(int copies, Duration timeout, Call<T> call) {
        return bursts(1, copies, copies, timeout, call).get(0);
    }

    private static long remaining(long deadline) {
        return Math.max(0, deadline - System.nanoTime());
    }
}
