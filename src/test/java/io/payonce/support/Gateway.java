package io.payonce.support;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;

import io.restassured.specification.RequestSpecification;

/**
 * Debian's nginx running the shipped gateway on a free loopback port: {@code src/main/docker/nginx/payonce.conf}
 * rendered by {@code scripts/gateway.sh render}, the renderer an operator runs, for the instances' ports, their
 * client-auth mode and a key file of its own: one random API key for each merchant a test names.
 * Configuration, key file and logs go to a temporary directory, which failures name.
 */
public final class Gateway implements AutoCloseable {

    private static final File NGINX = new File("/usr/sbin/nginx");
    private static final String RENDERER = "scripts/gateway.sh";
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Duration LISTEN_BOUND = Duration.ofSeconds(10);
    private static final Duration RENDER_BOUND = Duration.ofSeconds(30);
    /** The instances' bounds that the renderer derives the gateway's timeouts from, as it reads them. */
    private static final List<String> BOUNDS = List.of("PAYONCE_IDEMPOTENCY_WAIT_TIMEOUT", "PAYONCE_CHANNEL_TIMEOUT",
            "PAYONCE_DATABASE_TIMEOUT");

    private final Path dir;
    private final int port;
    private final Map<String, String> keyByMerchant;
    private final Process process;

    private Gateway(Path dir, int port, Map<String, String> keyByMerchant, Process process) {
        this.dir = dir;
        this.port = port;
        this.keyByMerchant = keyByMerchant;
        this.process = process;
    }

    /** Skips the calling test class where nginx is not installed. */
    public static void assumeInstalled() {
        Assumptions.assumeTrue(NGINX.canExecute(), "nginx is not installed (scripts/services.sh installs it)");
    }

    /**
     * Starts nginx in front of {@code first} and {@code second} (one instance twice to put it alone behind
     * the gateway), speaking to them as their client-auth mode asks and waiting for them as their bounds
     * ask, with an API key for each of {@code merchants}, and waits until it listens.
     */
    public static Gateway start(AppProcess first, AppProcess second, String... merchants) throws IOException,
            InterruptedException {
        if (first.certificates() != second.certificates()) {
            throw new IllegalArgumentException(first + " and " + second + " differ in client-auth mode");
        }
        Map<String, String> bounds = new LinkedHashMap<>();
        for (String bound : BOUNDS) {
            if (first.setting(bound) != null) {
                bounds.put(bound, first.setting(bound));
            }
        }
        return start(List.of(first.port(), second.port()), first.certificates(), bounds, merchants);
    }

    /**
     * Starts nginx in front of the instances on {@code ports} of the loopback address: over mTLS with the
     * gateway's certificate of {@code certificates} (a {@code scripts/dev-ca.sh} directory), or over plain
     * HTTP when it is null.
     */
    public static Gateway start(List<Integer> ports, Path certificates, String... merchants) throws IOException,
            InterruptedException {
        return start(ports, certificates, Map.of(), merchants);
    }

    /**
     * As above, for instances whose bounds are {@code bounds}: the variables of {@link #BOUNDS} as the instances
     * were given them, from which the renderer derives the gateway's timeouts.
     */
    public static Gateway start(List<Integer> ports, Path certificates, Map<String, String> bounds,
            String... merchants) throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("payonce-nginx");
        Map<String, String> keyByMerchant = new LinkedHashMap<>();
        StringBuilder keyFile = new StringBuilder();
        for (String merchant : merchants) {
            String key = randomKey();
            keyByMerchant.put(merchant, key);
            keyFile.append('"').append(key).append("\" ").append(merchant).append(";\n");
        }
        Path keys = dir.resolve("api-keys");
        Files.writeString(keys, keyFile);
        int port = AppProcess.freePort();
        List<String> render = new ArrayList<>(List.of(RENDERER, "render", "--dir", dir.toString(), "--keys",
                keys.toString(), "--listen", "127.0.0.1:" + port));
        for (int upstream : ports) {
            render.addAll(List.of("--upstream", "127.0.0.1:" + upstream));
        }
        render.addAll(certificates == null ? List.of("--client-auth", "none")
                : List.of("--client-auth", "mtls", "--certs", certificates.toString()));
        Path conf = Path.of(run(render, bounds, dir));
        Process process = new ProcessBuilder(NGINX.getPath(), "-p", dir.toString(), "-c", conf.toString(), "-g",
                "daemon off;").redirectErrorStream(true).redirectOutput(dir.resolve("stdout.log").toFile()).start();
        Gateway gateway = new Gateway(dir, port, keyByMerchant, process);
        try {
            gateway.awaitListening();
        } catch (AssertionError e) {
            gateway.close();
            throw e;
        }
        return gateway;
    }

    /** A key of the same shape as the real ones, in no key file. */
    public static String unknownKey() {
        return randomKey();
    }

    public String keyOf(String merchant) {
        String key = keyByMerchant.get(merchant);
        if (key == null) {
            throw new IllegalArgumentException("no API key for " + merchant + "; start the gateway with it");
        }
        return key;
    }

    public int port() {
        return port;
    }

    /** A request to the gateway carrying no API key. */
    public RequestSpecification request() {
        return given().baseUri("http://127.0.0.1").port(port);
    }

    /** A request to the gateway carrying {@code merchant}'s API key, and nothing naming the merchant. */
    public RequestSpecification as(String merchant) {
        return request().header("X-Api-Key", keyOf(merchant));
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Override
    public String toString() {
        return "nginx on " + port + " (config and logs in " + dir + ")";
    }

    private void awaitListening() {
        Await.until(this + " to listen", LISTEN_BOUND, () -> {
            assertTrue(process.isAlive(), "nginx exited: see its logs in " + dir);
            try {
                request().get("/");
                return true;
            } catch (Exception notYet) {
                return false;
            }
        });
    }

    /** Runs {@code command}, answering its standard output's last line; fails with its output otherwise. */
    private static String run(List<String> command, Map<String, String> bounds, Path dir) throws IOException,
            InterruptedException {
        Path output = dir.resolve("render.log");
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile());
        builder.environment().keySet().removeAll(BOUNDS);
        builder.environment().putAll(bounds);
        Process process = builder.start();
        boolean ended = process.waitFor(RENDER_BOUND.toMillis(), TimeUnit.MILLISECONDS);
        List<String> lines = Files.readAllLines(output, StandardCharsets.UTF_8);
        if (!ended || process.exitValue() != 0 || lines.isEmpty()) {
            process.destroyForcibly();
            throw new IllegalStateException(String.join(" ", command) + " failed: " + String.join("\n", lines));
        }
        return lines.get(lines.size() - 1);
    }

    /** 256 random bits as lowercase hex, as api-keys.example asks of a real key. */
    private static String randomKey() {
        byte[] bytes = new byte[32];
        RANDOM.nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
