package io.payonce.gateway;

import static io.payonce.gateway.ProblemAnswer.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import io.payonce.support.AppProcess;
import io.payonce.support.Gateway;
import io.restassured.http.ContentType;
import io.restassured.response.Response;

/**
 * The answers the shipped gateway makes itself, no instance's among them: each is problem+json with a code
 * like the service's own, never nginx's HTML page. None needs a running instance: a body over the limit and
 * a request nginx cannot read are refused before any instance is asked, and the others are what the gateway
 * answers when no instance can be reached or none answers in time.
 */
class GatewayAnswersIT {

    private static final String MERCHANT = "merchant_gw_answers";

    @Test
    void bodyOver16KiB_is413_body_too_large() throws Exception {
        try (Gateway gateway = Gateway.start(List.of(AppProcess.freePort()), null, MERCHANT)) {
            Response refused = gateway.as(MERCHANT).contentType(ContentType.JSON)
                    .body("{\"order_no\":\"" + "x".repeat(17 * 1024) + "\"}").post("/orders");

            assertProblem(refused, 413, "body_too_large");
        }
    }

    @Test
    void requestTheGatewayCannotRead_is400_invalid_request() throws Exception {
        try (Gateway gateway = Gateway.start(List.of(AppProcess.freePort()), null, MERCHANT);
                Socket socket = new Socket("127.0.0.1", gateway.port())) {
            socket.getOutputStream().write("GET /orders/ord_1 HTTP/1.1\r\nHost: payonce\r\nno colon here\r\n\r\n"
                    .getBytes(StandardCharsets.US_ASCII));

            String answer = new String(socket.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);

            assertTrue(answer.startsWith("HTTP/1.1 400"), answer);
            assertTrue(answer.contains("application/problem+json"), answer);
            assertTrue(answer.contains("\"code\":\"invalid_request\""), answer);
        }
    }

    @Test
    void noInstanceListening_is502_bad_gateway() throws Exception {
        try (Gateway gateway = Gateway.start(List.of(AppProcess.freePort(), AppProcess.freePort()), null, MERCHANT)) {
            Response refused = gateway.as(MERCHANT).get("/orders/ord_1");

            assertProblem(refused, 502, "bad_gateway");
        }
    }

    /**
     * An instance that takes the request and never answers, in both upstream slots: the POST is sent once, as
     * an instance that received a request answers it within its own bounds, and the client gets the gateway's
     * 504 once the read timeout derived from those bounds has passed.
     */
    @Test
    void instanceSilentPastItsBounds_is504_gateway_timeout_andThePostIsSentOnce() throws Exception {
        try (SilentUpstream silent = new SilentUpstream();
                Gateway gateway = Gateway.start(List.of(silent.port(), silent.port()), null,
                        Map.of("PAYONCE_IDEMPOTENCY_WAIT_TIMEOUT", "1s", "PAYONCE_CHANNEL_TIMEOUT", "1s",
                                "PAYONCE_DATABASE_TIMEOUT", "100ms"),
                        MERCHANT)) {
            Response timedOut = gateway.as(MERCHANT).contentType(ContentType.JSON)
                    .body(Map.of("order_no", "ord_1", "amount", 100, "currency", "EUR")).post("/orders");

            assertProblem(timedOut, 504, "gateway_timeout");
            assertEquals(1, silent.requests(), "the POST reached an instance, so it was not sent to another");
        }
    }

    /** A TCP server on a free loopback port that reads whatever comes and answers nothing. */
    private static final class SilentUpstream implements AutoCloseable {

        private final ServerSocket server = new ServerSocket(0);
        private final List<Socket> connections = new ArrayList<>();
        private final AtomicInteger requests = new AtomicInteger();

        SilentUpstream() throws IOException {
            Thread.ofVirtual().start(this::accept);
        }

        int port() {
            return server.getLocalPort();
        }

        /** Connections that carried a request. */
        int requests() {
            return requests.get();
        }

        private void accept() {
            try {
                while (true) {
                    Socket connection = server.accept();
                    synchronized (connections) {
                        connections.add(connection);
                    }
                    Thread.ofVirtual().start(() -> read(connection));
                }
            } catch (IOException closed) {
                // closed by the test
            }
        }

        private void read(Socket connection) {
            try (InputStream in = connection.getInputStream()) {
                if (in.read() >= 0) {
                    requests.incrementAndGet();
                }
                in.transferTo(OutputStream.nullOutputStream());
            } catch (IOException closed) {
                // closed by the gateway or the test
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
            synchronized (connections) {
                for (Socket connection : connections) {
                    connection.close();
                }
            }
        }
    }
}
