package io.payonce.bench;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * CPU time of the processes a scenario keeps busy (application, MariaDB, Redis, this driver) and of the
 * whole machine, from /proc. On two cores a figure is only trustworthy when the driver's share is
 * small and "other" (anything else on the machine, such as a build running beside us) is near zero.
 * Where the application runs as several instances, or the database as several nodes, their times are
 * summed.
 */
final class CpuMeter {

    /** Linux reports process and machine times in clock ticks of 1/100 s on every common configuration. */
    private static final double TICKS_PER_SECOND = 100;

    private final List<Long> appPids;
    private final List<Long> dbPids;
    private final long redisPid;
    private final long driverPid = ProcessHandle.current().pid();

    /** Ticks used so far, per process and machine-wide, at one instant. */
    record Sample(long nanos, long app, long appSystem, long appJit, long db, long redis, long driver,
            long machineBusy) {
    }

    /** Percent of one core over an interval (200 = both cores of this machine busy throughout). */
    record Usage(double app, double appSystem, double appJit, double db, double redis, double driver, double other) {

        /**
         * The report's columns: app (of which in the kernel, and in its JIT compiler threads), db, redis, driver,
         * other, and their sum.
         */
        String describe() {
            return String.format(Locale.ROOT, "%3.0f(%2.0f %2.0f) %3.0f %3.0f %3.0f %3.0f %4.0f", app, appSystem, appJit,
                    db, redis, driver, other, total());
        }

        /** Busy time of the whole machine; near 100 per core means the figure is bounded by CPU. */
        double total() {
            return app + db + redis + driver + other;
        }
    }

    CpuMeter(List<Long> appPids, List<Long> dbPids, long redisPid) {
        this.appPids = List.copyOf(appPids);
        this.dbPids = List.copyOf(dbPids);
        this.redisPid = redisPid;
    }

    Sample sample() {
        long app = 0;
        long appSystem = 0;
        long appJit = 0;
        for (long pid : appPids) {
            long[] times = processTimes(pid);
            app += times[0] + times[1];
            appSystem += times[1];
            appJit += compilerTicks(pid);
        }
        long db = 0;
        for (long pid : dbPids) {
            db += total(pid);
        }
        return new Sample(System.nanoTime(), app, appSystem, appJit, db, total(redisPid), total(driverPid),
                machineBusyTicks());
    }

    Usage since(Sample start) {
        Sample end = sample();
        double seconds = (end.nanos() - start.nanos()) / 1e9;
        double scale = 100 / (seconds * TICKS_PER_SECOND);
        double app = (end.app() - start.app()) * scale;
        double appSystem = (end.appSystem() - start.appSystem()) * scale;
        double appJit = (end.appJit() - start.appJit()) * scale;
        double db = (end.db() - start.db()) * scale;
        double redis = (end.redis() - start.redis()) * scale;
        double driver = (end.driver() - start.driver()) * scale;
        double machine = (end.machineBusy() - start.machineBusy()) * scale;
        return new Usage(app, appSystem, appJit, db, redis, driver, Math.max(0, machine - app - db - redis - driver));
    }

    private static long total(long pid) {
        long[] times = processTimes(pid);
        return times[0] + times[1];
    }

    /** utime and stime of a process, fields 14 and 15 of /proc/PID/stat (after the parenthesised name). */
    static long[] processTimes(long pid) {
        return pid <= 0 ? new long[2] : times(Path.of("/proc/" + pid + "/stat"), null);
    }

    /**
     * CPU ticks of a JVM's JIT compiler threads (HotSpot names them "C1 CompilerThread0", "C2 ..."): while
     * they are busy, the application's code is still being compiled and its figures are not yet its own.
     */
    static long compilerTicks(long pid) {
        if (pid <= 0) {
            return 0;
        }
        long ticks = 0;
        try (DirectoryStream<Path> threads = Files.newDirectoryStream(Path.of("/proc/" + pid + "/task"))) {
            for (Path thread : threads) {
                long[] times = times(thread.resolve("stat"), "C[12] CompilerThre.*");
                ticks += times[0] + times[1];
            }
        } catch (IOException | RuntimeException e) {
            return 0;
        }
        return ticks;
    }

    /** utime and stime from a stat file; zero when it cannot be read or its name does not match. */
    private static long[] times(Path statFile, String namePattern) {
        try {
            String stat = Files.readString(statFile);
            if (namePattern != null && !stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')')).matches(namePattern)) {
                return new long[2];
            }
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return new long[] { Long.parseLong(fields[11]), Long.parseLong(fields[12]) };
        } catch (IOException | RuntimeException e) {
            return new long[2];
        }
    }

    /** Busy ticks of all cores: the first line of /proc/stat without idle and iowait. */
    static long machineBusyTicks() {
        try {
            List<String> lines = Files.readAllLines(Path.of("/proc/stat"));
            String[] f = lines.get(0).trim().split("\\s+");
            long busy = 0;
            for (int i = 1; i < f.length && i <= 8; i++) {
                if (i != 4 && i != 5) {
                    busy += Long.parseLong(f[i]);
                }
            }
            return busy;
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    /** VmRSS (or another field, such as VmHWM) of a process in KiB; -1 when it cannot be read. */
    static long memoryKib(long pid, String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (line.startsWith(field + ":")) {
                    return Long.parseLong(line.substring(field.length() + 1).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // the process is gone
        }
        return -1;
    }
}
