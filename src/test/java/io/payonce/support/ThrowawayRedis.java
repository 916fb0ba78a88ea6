package io.payonce.support;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;

/**
 * A Redis of the test's own (never the shared one on 6379), reached by the service through a
 * {@link TcpProxy}, so a test can cut, hang, slow or flush it. Tests reach both through the static
 * accessors.
 */
public class ThrowawayRedis implements QuarkusTestResourceLifecycleManager {

    private static final Duration START_BOUND = Duration.ofSeconds(10);

    private static volatile int redisPort;
    private static volatile TcpProxy proxy;
    private Process process;

    /** The proxy the service talks to Redis through. */
    public static TcpProxy proxy() {
        if (proxy == null) {
            throw new IllegalStateException("ThrowawayRedis is not started (or not visible to this class loader)");
        }
        return proxy;
    }

    /** The throwaway Redis itself, bypassing the proxy. */
    public static int redisPort() {
        return redisPort;
    }

    /**
     * Sends one command straight to the throwaway Redis (inline protocol, so arguments without spaces)
     * and answers its first reply line, e.g. {@code +OK} or {@code :3}.
     */
    public static String command(String command) {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), redisPort)) {
            socket.setSoTimeout(2_000);
            OutputStream out = socket.getOutputStream();
            out.write((command + "\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            return new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII))
                    .readLine();
        } catch (IOException e) {
            throw new IllegalStateException("throwaway Redis did not answer " + command, e);
        }
    }

    @Override
    public Map<String, String> start() {
        try {
            redisPort = freePort();
            File log = new File("target/throwaway-redis-" + redisPort + ".log");
            process = new ProcessBuilder("/usr/bin/redis-server", "--port", String.valueOf(redisPort),
                    "--save", "", "--appendonly", "no", "--bind", "127.0.0.1")
                    .redirectErrorStream(true)
                    .redirectOutput(log)
                    .start();
            awaitPong(log);
            proxy = new TcpProxy(redisPort);
            return Map.of("quarkus.redis.hosts", "redis://127.0.0.1:" + proxy.port());
        } catch (IOException e) {
            stop();
            throw new IllegalStateException("cannot start a throwaway Redis", e);
        }
    }

    @Override
    public void stop() {
        if (proxy != null) {
            proxy.close();
            proxy = null;
        }
        if (process != null) {
            process.destroy();
            try {
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
            process = null;
        }
    }

    private void awaitPong(File log) {
        Await.until("redis-server to answer PING (see " + log + ")", START_BOUND, () -> {
            if (!process.isAlive()) {
                throw new IllegalStateException("redis-server exited at once; see " + log);
            }
            try {
                return "+PONG".equals(command("PING"));
            } catch (IllegalStateException notYet) {
                return false; // not listening yet
            }
        });
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
