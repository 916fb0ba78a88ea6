package io.payonce.recovery;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Objects;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import io.payonce.support.AppProcess;
import io.payonce.support.Await;

/**
 * The packaged application refuses to start with settings under which reconciliation could look at a
 * payment whose owner may still be waiting for the channel (contract section 6), or with nowhere to charge
 * (contract section 8): it exits with a non-zero code before it is ever ready, and its log names the settings
 * to change. The same settings with a shorter channel timeout, or with the sandbox on, start as usual.
 */
class StartupConfigIT {

    private static final File LOGS = new File("target/it-logs");
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();

    /**
     * Each setting that must outlast another, set not to: min-age 3 s while an owner waits up to 5 s (the
     * default channel timeout) for the channel; an owner's lease ending after 4 s, likewise; reconciliation
     * closing payments at the channel after 20 s when it may not look at them before 30 s (the default
     * min-age).
     */
    @ParameterizedTest(name = "{0}={1} names {2} and {3}")
    @CsvSource({
            "PAYONCE_RECONCILE_MIN_AGE, 3s, payonce.reconcile.min-age, payonce.channel.timeout",
            "PAYONCE_IDEMPOTENCY_LEASE, 4s, payonce.idempotency.lease, payonce.channel.timeout",
            "PAYONCE_RECONCILE_GIVE_UP_AFTER, 20s, payonce.reconcile.give-up-after, payonce.reconcile.min-age" })
    void settingNotAboveWhatItMustOutlast_refusesToStart_namingBothKeys(String variable, String value, String key,
            String outlasted) throws Exception {
        // given
        try (AppProcess app = AppProcess.named("config-" + variable.toLowerCase().replace('_', '-')).env(variable, value)) {
            // when
            boolean ready = startAndAwaitReadyOrExit(app);

            // then
            assertRefused(app, ready, key, outlasted);
        }
    }

    /**
     * A lease the owner would routinely outlive through its database time before the charge: 1.1 s is above
     * the 1 s channel timeout, but not above it plus the 5 s an opening transaction may take.
     */
    @Test
    void leaseNotAboveChannelAndDatabaseTimeouts_refusesToStart_namingTheDatabaseTimeout() throws Exception {
        // given
        try (AppProcess app = AppProcess.named("config-lease-database").env("PAYONCE_DATABASE_TIMEOUT", "5s")
                .env("PAYONCE_IDEMPOTENCY_LEASE", "1100ms").env("PAYONCE_CHANNEL_TIMEOUT", "1s")) {
            // when
            boolean ready = startAndAwaitReadyOrExit(app);

            // then
            assertRefused(app, ready, "payonce.idempotency.lease", "payonce.database.timeout");
        }
    }

    /**
     * payonce.gateway.client-auth=mtls (the production default) with no certificate, key or CA: the instance
     * would otherwise have nothing to serve the business API with but plain HTTP, which mtls forbids.
     */
    @Test
    void mtlsWithoutCertificates_refusesToStart_namingTheKeys() throws Exception {
        // given
        try (AppProcess app = AppProcess.named("config-mtls-without-certificates")
                .env("PAYONCE_GATEWAY_CLIENT_AUTH", "mtls")) {
            // when
            boolean ready = startAndAwaitReadyOrExit(app);

            // then
            assertRefused(app, ready, "payonce.gateway.client-auth", "payonce.gateway.tls.certificate",
                    "payonce.gateway.tls.key", "payonce.gateway.tls.ca");
        }
    }

    /** The control: the refusals above come from the comparison, not from a short min-age as such. */
    @Test
    void minAgeAboveAShorterChannelTimeout_startsAndIsReady() throws Exception {
        // given: the 3 s min-age refused above, with owners that give up on the channel after 1 s
        try (AppProcess app = AppProcess.named("config-valid").env("PAYONCE_RECONCILE_MIN_AGE", "3s")
                .env("PAYONCE_CHANNEL_TIMEOUT", "1s")) {
            // when
            boolean ready = startAndAwaitReadyOrExit(app);

            // then
            assertTrue(ready, () -> "started and ready; " + exitAndLog(app));
        }
    }

    /**
     * The prod profile as a deployment gets it, with no channel URL: the sandbox is off by default there, so
     * nothing would take the charges, and the start is refused naming the key to set.
     */
    @Test
    void prodProfileWithoutChannelUrl_refusesToStart_namingTheKey() throws Exception {
        // given: neither the channel nor the sandbox switch set (the test launcher sets both otherwise)
        try (AppProcess app = AppProcess.named("config-no-channel").unset("PAYONCE_CHANNEL_URL")
                .unset("PAYONCE_SANDBOX_ENABLED")) {
            // when
            boolean ready = startAndAwaitReadyOrExit(app);

            // then
            assertRefused(app, ready, "set payonce.channel.url", "payonce.sandbox.enabled=true");
        }
    }

    /** The control: with the sandbox turned on, the channel is the instance's own sandbox, and it starts. */
    @Test
    void sandboxOnWithoutChannelUrl_startsAndIsReady() throws Exception {
        // given
        try (AppProcess app = AppProcess.named("config-own-sandbox").unset("PAYONCE_CHANNEL_URL")
                .env("PAYONCE_SANDBOX_ENABLED", "true")) {
            // when
            boolean ready = startAndAwaitReadyOrExit(app);

            // then
            assertTrue(ready, () -> "started and ready; " + exitAndLog(app));
        }
    }

    /**
     * The endpoints' switch reads the value as text: a spelling other than {@code true} or {@code false} would
     * leave them served while the rest of the service takes the sandbox as off, so it is refused.
     */
    @Test
    void sandboxSwitchNeitherTrueNorFalse_refusesToStart_namingTheKey() throws Exception {
        // given
        try (AppProcess app = AppProcess.named("config-switch-spelling").env("PAYONCE_SANDBOX_ENABLED", "FALSE")) {
            // when
            boolean ready = startAndAwaitReadyOrExit(app);

            // then
            assertRefused(app, ready, "payonce.sandbox.enabled", "true or false");
        }
    }

    /**
     * Starts {@code app} and waits, bounded by the start timeout, until it is ready (true) or has exited
     * (false). Past the bound it is neither, which fails the test.
     */
    private static boolean startAndAwaitReadyOrExit(AppProcess app) throws IOException {
        app.start();
        return Await.until(app + " to be ready or to exit", AppProcess.START_TIMEOUT,
                () -> !app.isAlive() ? Boolean.FALSE : isReady(app) ? Boolean.TRUE : null, Objects::nonNull);
    }

    private static boolean isReady(AppProcess app) throws InterruptedException {
        HttpRequest ready = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.managementPort() + "/q/health/ready"))
                .timeout(Duration.ofSeconds(2)).GET().build();
        try {
            return HTTP.send(ready, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException notListening) {
            return false;
        }
    }

    private static void assertRefused(AppProcess app, boolean ready, String... keys) throws IOException {
        assertFalse(ready, () -> app + " started and served with settings it must refuse");
        assertNotEquals(0, app.exitValue(), () -> "a refusal is a failed start; " + exitAndLog(app));
        String log = Files.readString(latestLog(app).toPath());
        for (String key : keys) {
            assertTrue(log.contains(key), () -> "the log names " + key + "; " + exitAndLog(app));
        }
    }

    /**
     * The log of the app's latest start: AppProcess writes each start to
     * {@code target/it-logs/<name>-<port>-<start>.log}.
     */
    private static File latestLog(AppProcess app) {
        // AppProcess names itself name@port
        String prefix = app.toString().replace('@', '-') + "-";
        File[] logs = LOGS.listFiles((dir, file) -> file.startsWith(prefix) && file.endsWith(".log"));
        if (logs == null || logs.length == 0) {
            throw new AssertionError("no log of " + app + " in " + LOGS.getAbsolutePath());
        }
        return Arrays.stream(logs).max(Comparator.comparingLong(File::lastModified)).orElseThrow();
    }

    private static String exitAndLog(AppProcess app) {
        String exit = app.isAlive() ? "still running" : "exit code " + app.exitValue();
        return exit + ", log " + latestLog(app).getPath();
    }
}
