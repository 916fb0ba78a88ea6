package io.payonce.support;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Assumptions;

import io.restassured.specification.RequestSpecification;

/**
 * Debian's nginx running the shipped {@code src/main/docker/nginx/payonce.conf} on a free loopback port, its
 * placeholders filled with the instances' ports and a key file of its own: one random API key for each
 * merchant a test names. Configuration, key file and logs go to a temporary directory, which failures name.
 */
public final class Gateway implements AutoCloseable {

    private static final File NGINX = new File("/usr/sbin/nginx");
    private static final Path CONF = Path.of("src/main/docker/nginx/payonce.conf");
    private static final Pattern PLACEHOLDER = Pattern.compile("@[A-Z_]+@");
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Duration LISTEN_BOUND = Duration.ofSeconds(10);

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
     * the gateway), with an API key for each of {@code merchants}, and waits until it listens.
     */
    public static Gateway start(AppProcess first, AppProcess second, String... merchants) throws IOException,
            InterruptedException {
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
        String conf = Files.readString(CONF)
                .replace("@ERROR_LOG@", dir.resolve("error.log").toString())
                .replace("@ACCESS_LOG@", dir.resolve("access.log").toString())
                .replace("@PID_FILE@", dir.resolve("nginx.pid").toString())
                .replace("@TEMP_DIR@", dir.toString())
                .replace("@API_KEYS@", keys.toString())
                .replace("@PORT_A@", Integer.toString(first.port()))
                .replace("@PORT_B@", Integer.toString(second.port()))
                .replace("@LISTEN_PORT@", Integer.toString(port));
        Matcher left = PLACEHOLDER.matcher(conf);
        if (left.find()) {
            throw new IllegalStateException(CONF + " has a placeholder this helper does not fill: " + left.group());
        }
        Path confFile = dir.resolve("nginx.conf");
        Files.writeString(confFile, conf);
        Process process = new ProcessBuilder(NGINX.getPath(), "-p", dir.toString(), "-c", confFile.toString(), "-g",
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

    /** 256 random bits as lowercase hex, as api-keys.example asks of a real key. */
    private static String randomKey() {
        byte[] bytes = new byte[32];
        RANDOM.nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
