package io.payonce.support;

import java.io.File;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One run of {@code mariadb-install-db} for a server a test starts: a fresh data directory holding the
 * system tables, made with no my.cnf (nothing of the shared server's configuration applies), a root that
 * logs in without a password, and a temporary directory of its own, so that no other server's temporary
 * tables are beside its bootstrap's. Its output goes to a log that {@link ServerLogs} prints when a test
 * fails, and the failure's own message quotes that log's last words.
 */
final class MariaDbInstall {

    private static final String INSTALL_DB = "/usr/bin/mariadb-install-db";
    /** An install takes about a second; a machine busy with other builds may make that many. */
    static final Duration BOUND = Duration.ofSeconds(60);
    /** The lines of the install's log a failure quotes: the bootstrap server's last words. */
    private static final int QUOTED_LINES = 25;
    /** What the script says when its bootstrap server failed, before a page of general advice. */
    private static final String VERDICT = "Installation of system tables failed!";

    private final String what;
    private final File log;
    private final Process process;

    private MariaDbInstall(String what, File log, Process process) {
        this.what = what;
        this.log = log;
        this.process = process;
    }

    /**
     * Starts the install of {@code datadir} for {@code what} (named in a failure), its bootstrap server run
     * as {@code user} with {@code tmpdir}, which that user must be able to write, and {@code serverOptions}.
     */
    static MariaDbInstall start(String what, File datadir, File tmpdir, String user, File log,
            List<String> serverOptions) throws IOException {
        List<String> command = new ArrayList<>(List.of(INSTALL_DB, "--no-defaults",
                "--datadir=" + datadir.getAbsolutePath(), "--tmpdir=" + tmpdir.getAbsolutePath(), "--user=" + user,
                "--auth-root-authentication-method=normal", "--skip-test-db"));
        command.addAll(serverOptions);
        ServerLogs.register(log);
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log).start();
        return new MariaDbInstall(what, log, process);
    }

    /** Until the install has ended; fails with its exit code and its log's tail unless it succeeded in time. */
    void await() throws InterruptedException {
        if (!process.waitFor(BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new AssertionError("mariadb-install-db for " + what + " took over " + BOUND + "; see " + log
                    + ", which ends:\n" + ServerLogs.tail(log, QUOTED_LINES));
        }
        if (process.exitValue() != 0) {
            throw new AssertionError("mariadb-install-db failed for " + what + " (exit " + process.exitValue()
                    + "); see " + log + ", which says:\n" + lastWords());
        }
    }

    /** The log's last lines before the script's verdict, and the verdict; or its last lines. */
    private String lastWords() {
        String tail = ServerLogs.tail(log, 4 * QUOTED_LINES);
        int verdict = tail.indexOf(VERDICT);
        if (verdict < 0) {
            return ServerLogs.tail(log, QUOTED_LINES);
        }
        List<String> before = tail.substring(0, verdict).strip().lines().toList();
        return String.join("\n", before.subList(Math.max(0, before.size() - QUOTED_LINES), before.size())) + "\n"
                + VERDICT + "\n";
    }
}
