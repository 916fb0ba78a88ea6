package io.payonce.support;

import static io.restassured.RestAssured.given;

import java.io.File;
import java.io.FileReader;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import io.restassured.specification.RequestSpecification;

/**
 * The packaged application as a separate process: what the build made, as
 * {@code target/quarkus-artifact.properties} names it (the way {@code @QuarkusIntegrationTest} reads it),
 * so the jar after {@code package} and the native executable after {@code package -Dnative}. Configured
 * only by environment variables as a deployment would be. It can be stopped politely ({@link #terminate},
 * SIGTERM), killed ({@link #kill}, SIGKILL: no shutdown hook, no last write) and started again on the same
 * port with the same settings. Every start writes its own log under {@code target/it-logs}.
 */
public final class AppProcess implements AutoCloseable {

    public static final Duration START_TIMEOUT = Duration.ofSeconds(60);
    private static final File TARGET = new File("target");
    private static final File ARTIFACT = new File(TARGET, "quarkus-artifact.properties");
    private static final File LOGS = new File("target/it-logs");

    private final String name;
    private final int port;
    private final int managementPort;
    private final Map<String, String> env;
    private final Set<String> unset = new HashSet<>();
    private Path certificates;
    private int starts;
    /** What the latest start writes: its standard output and error. */
    private File log;
    private Process process;

    private AppProcess(String name, int port, int managementPort, Map<String, String> env) {
        this.name = name;
        this.port = port;
        this.managementPort = managementPort;
        this.env = env;
    }

    /**
     * An instance called {@code name} (its logs are named after it) on a free loopback port, with its
     * management interface on another, not started yet.
     */
    public static AppProcess named(String name) throws IOException {
        return new AppProcess(name, freePort(), freePort(), new LinkedHashMap<>());
    }

    /** Sets an environment variable for this and every later start; the rest is inherited from the build. */
    public AppProcess env(String key, String value) {
        env.put(key, value);
        unset.remove(key);
        return this;
    }

    /**
     * Leaves {@code key} out of the environment of this and every later start, whether set above or inherited:
     * the application then takes its own default.
     */
    public AppProcess unset(String key) {
        env.remove(key);
        unset.add(key);
        return this;
    }

    /** Charges through another instance's sandbox (or any channel at {@code url}). */
    public AppProcess channel(String url) {
        return env("PAYONCE_CHANNEL_URL", url);
    }

    /**
     * Serves the business API over TLS only, requiring a client certificate of the CA in {@code certificates}
     * (payonce.gateway.client-auth=mtls), with the instance's certificate and key from there: a directory
     * {@code scripts/dev-ca.sh} made.
     */
    public AppProcess mtls(Path certificates) {
        this.certificates = certificates;
        return env("PAYONCE_GATEWAY_CLIENT_AUTH", "mtls")
                .env("PAYONCE_GATEWAY_TLS_CERTIFICATE", certificates.resolve("service.crt").toString())
                .env("PAYONCE_GATEWAY_TLS_KEY", certificates.resolve("service.key").toString())
                .env("PAYONCE_GATEWAY_TLS_CA", certificates.resolve("ca.crt").toString());
    }

    /** The value this instance's start gives {@code variable} of its own, or null. */
    public String setting(String variable) {
        return env.get(variable);
    }

    /** The certificates directory of {@link #mtls}, or null when the instance serves plain HTTP. */
    public Path certificates() {
        return certificates;
    }

    /** The business port: plain HTTP, or TLS only with {@link #mtls}. */
    public int port() {
        return port;
    }

    /** The log of the latest start (its standard output and error), null before the first. */
    public File log() {
        return log;
    }

    /** The port of this instance's management interface: /q/health, /q/metrics, /q/openapi. */
    public int managementPort() {
        return managementPort;
    }

    /** The base URL of this instance's own sandbox channel, for other instances to charge through. */
    public String sandboxUrl() {
        return (certificates == null ? "http" : "https") + "://127.0.0.1:" + port + "/sandbox";
    }

    /** Starts the process without waiting for it; see {@link #awaitReady()}. */
    public AppProcess start() throws IOException {
        if (process != null && process.isAlive()) {
            throw new IllegalStateException(name + " is running already");
        }
        LOGS.mkdirs();
        log = new File(LOGS, name + "-" + port + "-" + (++starts) + ".log");
        ProcessBuilder builder = new ProcessBuilder(command())
                .redirectErrorStream(true)
                .redirectOutput(log);
        builder.environment().put("QUARKUS_HTTP_PORT", Integer.toString(port));
        builder.environment().put("QUARKUS_MANAGEMENT_PORT", Integer.toString(managementPort));
        // loopback only: nothing these tests start is reachable from outside the machine
        builder.environment().put("QUARKUS_HTTP_HOST", "127.0.0.1");
        builder.environment().put("QUARKUS_MANAGEMENT_HOST", "127.0.0.1");
        // the packaged application runs the prod profile: these instances drive their sandbox and are
        // spoken to directly, as contract section 8 says test suites do (a test may set otherwise)
        builder.environment().put("PAYONCE_SANDBOX_ENABLED", "true");
        builder.environment().put("PAYONCE_GATEWAY_CLIENT_AUTH", "none");
        // the default channel URL names localhost, which may resolve to ::1, where nothing listens
        builder.environment().put("PAYONCE_CHANNEL_URL", sandboxUrl());
        builder.environment().putAll(env);
        builder.environment().keySet().removeAll(unset);
        process = builder.start();
        return this;
    }

    /** The packaged application the build made, and whether it is the native executable. */
    public record Packaged(File file, boolean isNative) {
    }

    /**
     * What {@code target/quarkus-artifact.properties} names; fails naming what to run when the build made
     * nothing runnable.
     */
    public static Packaged packaged() {
        Properties artifact = new Properties();
        try (Reader in = new FileReader(ARTIFACT, StandardCharsets.UTF_8)) {
            artifact.load(in);
        } catch (IOException missing) {
            throw new IllegalStateException("the packaged application is missing (no " + ARTIFACT.getPath()
                    + "): run ./mvnw package first", missing);
        }
        File file = new File(TARGET, artifact.getProperty("path", ""));
        if (!file.isFile()) {
            throw new IllegalStateException("the packaged application is missing: " + file.getAbsolutePath());
        }
        return new Packaged(file, "native".equals(artifact.getProperty("type")));
    }

    /** How the packaged application is started. */
    private static List<String> command() {
        Packaged app = packaged();
        if (app.isNative()) {
            // the executable's own heap bound; it takes no JIT options
            return List.of(app.file().getPath(), "-Xmx256m");
        }
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        // C1 only: these processes live for seconds, and on a small machine start time is what counts
        return List.of(java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-jar", app.file().getPath());
    }

    /** Waits until {@code /q/health/ready} on the management port answers 200, or fails the test. */
    public AppProcess awaitReady() {
        Await.until(name + " on port " + port + " to be ready", START_TIMEOUT, () -> {
            if (!process.isAlive()) {
                throw new AssertionError(name + " exited with " + process.exitValue() + " before it was ready; see "
                        + LOGS.getPath());
            }
            try {
                return management().get("/q/health/ready").statusCode() == 200;
            } catch (Exception notYet) {
                return false; // not listening yet
            }
        });
        return this;
    }

    /** A request to this instance's management interface. */
    public RequestSpecification management() {
        return given().baseUri("http://127.0.0.1").port(managementPort);
    }

    /** Starts each instance, then waits for all of them, so their start-ups overlap. */
    public static void startAll(AppProcess... apps) throws IOException, InterruptedException {
        for (AppProcess app : apps) {
            app.start();
        }
        for (AppProcess app : apps) {
            app.awaitReady();
        }
    }

    /** {@link #close()}s each instance in turn, skipping those a failed set-up never created. */
    public static void closeAll(AppProcess... apps) throws InterruptedException {
        for (AppProcess app : apps) {
            if (app != null) {
                app.close();
            }
        }
    }

    /** SIGKILL, as {@code kill -9}: the process gets no chance to finish or clean anything up. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            throw new AssertionError(name + " survived SIGKILL");
        }
    }

    /**
     * SIGSTOP: the process is frozen where it stands, as a garbage-collection stall, a frozen VM or a
     * container throttled to nothing would hold it, until {@link #resume()}.
     */
    public void pause() throws IOException, InterruptedException {
        signal("STOP");
    }

    /** SIGCONT: a paused process goes on from where it stood, its timers all due at once. */
    public void resume() throws IOException, InterruptedException {
        signal("CONT");
    }

    private void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new AssertionError("kill -" + name + " " + process.pid() + " failed");
        }
    }

    /** SIGTERM, as an orchestrator stops a container; returns at once, see {@link #awaitExit}. */
    public void terminate() {
        process.destroy();
    }

    /** Answers whether the process has exited within {@code bound}. */
    public boolean awaitExit(Duration bound) throws InterruptedException {
        return process.waitFor(bound.toMillis(), TimeUnit.MILLISECONDS);
    }

    public boolean isAlive() {
        return process != null && process.isAlive();
    }

    public int exitValue() {
        return process.exitValue();
    }

    /** Stops the instance whatever state it is in: politely first, then by force. */
    @Override
    public void close() throws InterruptedException {
        if (process == null || !process.isAlive()) {
            return;
        }
        terminate();
        if (!awaitExit(Duration.ofSeconds(15))) {
            kill();
        }
    }

    @Override
    public String toString() {
        return name + "@" + port;
    }

    /** A loopback port free now that no other instance of this JVM's tests was given. */
    public static int freePort() throws IOException {
        return LoopbackPorts.take();
    }
}
