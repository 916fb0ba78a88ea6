package io.payonce.support;

import java.time.Duration;
import java.util.function.Predicate;

/**
 * Waiting for a condition, the one way every test does it: look, then look again, first after a few
 * milliseconds and at most {@link #MAX_INTERVAL_MS} ms apart, until it holds or the bound has passed.
 * {@link #until} fails the test naming what was awaited and the last value seen; {@link #upTo} answers the
 * last value and leaves the judging to the test. A probe that throws an {@link AssertionError} or an
 * unchecked exception ends the wait at once.
 */
public final class Await {

    /** The first poll comes this soon after the first look: many conditions hold within milliseconds. */
    private static final long FIRST_INTERVAL_MS = 5;
    /** Often enough for a test to see a state that lasts a few hundred milliseconds, rarely enough to load nothing. */
    private static final long MAX_INTERVAL_MS = 50;

    /** A value to look at, which may take a call to the service or the database. */
    @FunctionalInterface
    public interface Probe<T> {
        T get() throws Exception;
    }

    /** A condition to look at, which may take a call to the service or the database. */
    @FunctionalInterface
    public interface Condition {
        boolean holds() throws Exception;
    }

    private Await() {
    }

    /** Until {@code condition} holds; fails naming {@code what} after {@code bound}. */
    public static void until(String what, Duration bound, Condition condition) {
        until(what, bound, condition::holds, Boolean.TRUE::equals);
    }

    /**
     * Until {@code probe} gives a value that is {@code done}, and answers it; fails naming {@code what} and the
     * last value after {@code bound}.
     */
    public static <T> T until(String what, Duration bound, Probe<T> probe, Predicate<? super T> done) {
        Seen<T> seen = poll(bound, probe, done);
        if (!seen.done()) {
            throw new AssertionError("waited " + bound + " for " + what + "; last seen: " + seen.last());
        }
        return seen.last();
    }

    /** Whether {@code condition} came to hold within {@code bound}; never fails. */
    public static boolean upTo(Duration bound, Condition condition) {
        return poll(bound, condition::holds, Boolean.TRUE::equals).done();
    }

    /** {@code probe}'s first value that is {@code done}, or its last within {@code bound}; never fails. */
    public static <T> T upTo(Duration bound, Probe<T> probe, Predicate<? super T> done) {
        return poll(bound, probe, done).last();
    }

    private record Seen<T>(T last, boolean done) {
    }

    private static <T> Seen<T> poll(Duration bound, Probe<T> probe, Predicate<? super T> done) {
        long deadline = System.nanoTime() + bound.toNanos();
        long interval = FIRST_INTERVAL_MS;
        while (true) {
            T value = look(probe);
            if (done.test(value)) {
                return new Seen<>(value, true);
            }
            long leftMs = (deadline - System.nanoTime()) / 1_000_000;
            if (leftMs <= 0) {
                return new Seen<>(value, false);
            }
            sleep(Math.min(interval, leftMs));
            interval = Math.min(interval * 2, MAX_INTERVAL_MS);
        }
    }

    private static <T> T look(Probe<T> probe) {
        try {
            return probe.get();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting", e);
        } catch (Exception e) {
            throw new AssertionError("looking failed: " + e, e);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting", e);
        }
    }
}
