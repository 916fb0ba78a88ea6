package io.payonce.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;

class ServerLogsTest {

    /** Set while this test runs the classes below, which stand for cluster tests and are not run alone. */
    private static volatile boolean launched;

    @Test
    void clusterTestFails_itsServersLogsAreInTheTestOutput() throws Exception {
        String output = runCapturingStderr(ClusterTestThatFails.class);

        assertTrue(output.contains("WSREP: gcomm: connect failed"), output);
        assertTrue(output.contains("ClusterTestThatFails"), "names the test: " + output);
    }

    @Test
    void clusterTestsServersDoNotStart_theirLogsAreInTheTestOutput() throws Exception {
        String output = runCapturingStderr(ClusterTestWhoseServerDoesNotStart.class);

        assertTrue(output.contains("[ERROR] Aborting"), output);
    }

    @Test
    void logPrintedOnAFailedStart_isPrintedAgainOnlyForWhatItGainedSince() throws Exception {
        File log = serverLog("first start\n");
        captureStderr(() -> ServerLogs.print("the start failed", List.of(log)));
        Files.writeString(log.toPath(), "second start\n", StandardOpenOption.APPEND);

        String again = captureStderr(() -> ServerLogs.print("the test failed", List.of(log)));

        assertTrue(again.contains("second start"), again);
        assertFalse(again.contains("first start"), again);
    }

    @ExtendWith(ServerLogs.OnFailure.class)
    static class ClusterTestThatFails {

        @BeforeAll
        static void startServers() throws Exception {
            serverLog("WSREP: gcomm: connect failed\n");
        }

        @Test
        void storm() {
            Assumptions.assumeTrue(launched, "run by ServerLogsTest");
            fail("a copy got a second charge");
        }
    }

    @ExtendWith(ServerLogs.OnFailure.class)
    static class ClusterTestWhoseServerDoesNotStart {

        @BeforeAll
        static void startServers() throws Exception {
            serverLog("[ERROR] Aborting\n");
            Assumptions.assumeTrue(launched, "run by ServerLogsTest");
            throw new AssertionError("mariadb-install-db failed for node 1");
        }

        @Test
        void storm() {
        }
    }

    private static File serverLog(String text) throws Exception {
        File log = ServerLogs.named("server-logs-test-" + System.nanoTime() + ".log");
        Files.writeString(log.toPath(), text, StandardCharsets.UTF_8);
        return log;
    }

    private static String runCapturingStderr(Class<?> testClass) throws Exception {
        SummaryGeneratingListener summary = new SummaryGeneratingListener();
        launched = true;
        String output;
        try {
            output = captureStderr(() -> LauncherFactory.create().execute(
                    LauncherDiscoveryRequestBuilder.request().selectors(selectClass(testClass)).build(), summary));
        } finally {
            launched = false;
        }
        assertEquals(1, summary.getSummary().getTotalFailureCount(), "the stand-in failed as meant to");
        return output;
    }

    private interface Action {
        void run() throws Exception;
    }

    private static String captureStderr(Action action) throws Exception {
        PrintStream stderr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            action.run();
        } finally {
            System.setErr(stderr);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }
}
