package io.payonce.support;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ExtensionContext.Namespace;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * The logs of the servers the cluster tests start ({@code mariadb-install-db}, {@code mariadbd} and Galera,
 * {@code redis-server}), written under {@code target/} and printed into the test output when something
 * fails, since a CI run keeps its output and not its working tree. Each server class registers its logs
 * as it opens them; a failure prints the end of what each log gained since it was last printed, so a
 * failed start caught in its class and then reported by {@link OnFailure} shows each line once.
 * Registration is JVM-wide, in the order logs are opened: the test classes of one run share the JVM
 * one after the other, and a class's failure prints only the logs opened since it began.
 */
public final class ServerLogs {

    /** Where the servers' own logs go: under {@code target/}, which a failed run leaves in place. */
    public static final File DIR = new File("target/it-logs");
    /** Enough for a server's last start-up and the error that stopped it; a whole log is in {@link #DIR}. */
    private static final int TAIL_LINES = 60;
    /** At most this much of a log's end is read: a chatty server's lines fit, a runaway one's do not flood. */
    private static final int TAIL_BYTES = 64 * 1024;

    /** Every registered log, in the order registered, and how many of its bytes have been printed. */
    private static final Map<File, Long> printed = new LinkedHashMap<>();

    private ServerLogs() {
    }

    /** Registers {@code log} for printing on a failure; answers it, so a caller can name it where it opens it. */
    public static File register(File log) {
        File absolute = log.getAbsoluteFile();
        synchronized (printed) {
            // last in the order: a log of a name used before belongs to whoever opens it now
            Long before = printed.remove(absolute);
            printed.put(absolute, before == null ? 0L : before);
        }
        return log;
    }

    /** A log in {@link #DIR}, registered. */
    public static File named(String fileName) {
        DIR.mkdirs();
        return register(new File(DIR, fileName));
    }

    /** How many logs are registered: a mark for {@link #printSince}. */
    static int registered() {
        synchronized (printed) {
            return printed.size();
        }
    }

    /** Prints to stderr the end of what each log registered after {@code mark} gained since it was last printed. */
    static void printSince(int mark, String why) {
        List<File> logs;
        synchronized (printed) {
            logs = new ArrayList<>(printed.keySet());
        }
        print(why, logs.subList(Math.min(mark, logs.size()), logs.size()));
    }

    /** Prints to stderr the end of what each of {@code logs} gained since it was last printed. */
    public static void print(String why, List<File> logs) {
        StringBuilder out = new StringBuilder("\n==== server logs: " + why + " ====\n");
        int shown = 0;
        for (File log : logs) {
            File absolute = log.getAbsoluteFile();
            long length = absolute.length();
            long from;
            synchronized (printed) {
                from = printed.getOrDefault(absolute, 0L);
                printed.put(absolute, length);
            }
            if (length < from) {
                from = 0; // made again since it was printed
            }
            if (length <= from) {
                continue;
            }
            shown++;
            out.append("---- ").append(absolute).append(" (last ").append(TAIL_LINES).append(" lines")
                    .append(from > 0 ? " of what it gained since printed above" : "").append(") ----\n")
                    .append(tail(absolute, from, length));
        }
        if (shown == 0) {
            out.append("(no server log has anything new since it was printed)\n");
        }
        out.append("==== end of server logs ====\n");
        System.err.print(out);
        System.err.flush();
    }

    /** The last {@code lines} lines of {@code log}, for a failure's own message. */
    public static String tail(File log, int lines) {
        return lastLines(log, 0, log.length(), lines);
    }

    private static String tail(File log, long from, long to) {
        return lastLines(log, from, to, TAIL_LINES);
    }

    private static String lastLines(File log, long from, long to, int lines) {
        long start = Math.max(from, to - TAIL_BYTES);
        byte[] bytes = new byte[(int) (to - start)];
        try (RandomAccessFile file = new RandomAccessFile(log, "r")) {
            file.seek(start);
            file.readFully(bytes);
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e + ")\n";
        }
        String[] all = new String(bytes, StandardCharsets.UTF_8).split("\n", -1);
        int end = all.length > 0 && all[all.length - 1].isEmpty() ? all.length - 1 : all.length;
        String[] last = Arrays.copyOfRange(all, Math.max(0, end - lines), end);
        return last.length == 0 ? "" : String.join("\n", last) + "\n";
    }

    /**
     * Prints the logs of the servers a test class started into the test output when one of its tests
     * fails, or its set-up or tear-down does (a server that did not start):
     * {@code @ExtendWith(ServerLogs.OnFailure.class)}.
     */
    public static final class OnFailure implements BeforeAllCallback, TestWatcher,
            LifecycleMethodExecutionExceptionHandler {

        private static final Namespace NAMESPACE = Namespace.create(OnFailure.class);
        private static final String MARK = "logs registered before the class began";

        @Override
        public void beforeAll(ExtensionContext context) {
            context.getStore(NAMESPACE).put(MARK, registered());
        }

        @Override
        public void testFailed(ExtensionContext context, Throwable cause) {
            print(context, context.getRequiredTestClass().getSimpleName() + "." + context.getDisplayName()
                    + " failed: " + cause);
        }

        @Override
        public void handleBeforeAllMethodExecutionException(ExtensionContext context, Throwable cause)
                throws Throwable {
            throw printed(context, "could not set up", cause);
        }

        @Override
        public void handleBeforeEachMethodExecutionException(ExtensionContext context, Throwable cause)
                throws Throwable {
            throw printed(context, "could not set up a test", cause);
        }

        @Override
        public void handleAfterEachMethodExecutionException(ExtensionContext context, Throwable cause)
                throws Throwable {
            throw printed(context, "could not clean up after a test", cause);
        }

        @Override
        public void handleAfterAllMethodExecutionException(ExtensionContext context, Throwable cause)
                throws Throwable {
            throw printed(context, "could not tear down", cause);
        }

        /** Prints the logs, saying that the context {@code what}; answers {@code cause}, for the handler to throw. */
        private static Throwable printed(ExtensionContext context, String what, Throwable cause) {
            print(context, context.getDisplayName() + " " + what + ": " + cause);
            return cause;
        }

        private static void print(ExtensionContext context, String why) {
            Integer mark = context.getStore(NAMESPACE).get(MARK, Integer.class);
            printSince(mark == null ? 0 : mark, why);
        }
    }
}
