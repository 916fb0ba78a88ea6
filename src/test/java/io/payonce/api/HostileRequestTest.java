package io.payonce.api;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.ledgerAttempts;
import static io.payonce.support.Fixtures.payRequest;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import io.payonce.support.Fixtures;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;

/**
 * What a hostile or broken client sends gets a problem+json refusal, changes nothing, and never depends on
 * whether Redis holds the answer: a member given twice, a body whose declared size is not the truth or
 * that never arrives, headers given twice, an Accept the API cannot meet. Raw sockets send what an HTTP
 * library would not.
 */
@QuarkusTest
class HostileRequestTest {

    /** The test profile's payonce.http.body-timeout, plus room for a loaded machine. */
    private static final int BODY_TIMEOUT_ANSWER_MS = 8_000;

    @Inject
    TestDatabase db;

    @ConfigProperty(name = "quarkus.http.test-port")
    int port;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
    }

    /** Each endpoint with a body, given a member twice: the first value and the last differ. */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', value = {
            "POST|/orders|{\"order_no\":\"ORDER\",\"amount\":100,\"amount\":1999,\"currency\":\"USD\"}",
            "POST|/pay|{\"order_no\":\"ORDER\",\"request_no\":\"REQUEST\",\"amount\":1,\"amount\":1999}",
            "POST|/sandbox/charges|{\"merchant_id\":\"merchant_a\",\"order_no\":\"ORDER\",\"request_no\":\"REQUEST\",\"amount\":1,\"amount\":1999,\"currency\":\"USD\"}",
            "PUT|/sandbox/behavior|{\"mode\":\"ok\",\"mode\":\"decline\",\"count\":5}" })
    void memberGivenTwice_isRefused_andChangesNothing(String method, String path, String template) {
        PayRequest p = payRequest();
        String body = template.replace("ORDER", p.orderNo()).replace("REQUEST", p.requestNo());

        Response answer = as(MERCHANT).header("Idempotency-Key", p.token()).body(body).request(method, path);

        answer.then().statusCode(400).contentType(Problems.MEDIA_TYPE).body("code", equalTo("malformed_json"));
        assertAll(
                () -> assertEquals(1, db.orders(MERCHANT), "no second order"),
                () -> assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, p.orderNo())),
                () -> assertTrue(db.tokenUnused(MERCHANT, p.token()), "the token is not consumed"),
                () -> assertEquals(0, ledgerAttempts(MERCHANT, p.orderNo()), "nothing reached the channel"),
                () -> as(MERCHANT).get("/sandbox/behavior").then().body("mode", equalTo("ok")));
    }

    /** The client says a megabyte is coming and sends 200 bytes: refused from the headers, not waited for. */
    @Test
    void bodyDeclaredOverTheLimit_isRefusedFromItsHeaders() throws IOException {
        String head = "POST /orders HTTP/1.1\r\nHost: localhost\r\nX-Merchant-Id: " + MERCHANT
                + "\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n";

        String answer = exchange(head + "{\"order_no\":\"" + id("ord") + "\",\"amount\":100,", 5_000);

        assertProblem(answer, 413, "body_too_large");
        assertEquals(0, db.orders(MERCHANT));
    }

    /** A body of unknown length could only be refused once too much of it was read. */
    @Test
    void bodyInChunks_isRefused_lengthRequired() throws IOException {
        String body = "{\"order_no\":\"" + id("ord") + "\",\"amount\":100,\"currency\":\"USD\"}";
        String head = "POST /orders HTTP/1.1\r\nHost: localhost\r\nX-Merchant-Id: " + MERCHANT
                + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

        String answer = exchange(head + Integer.toHexString(body.length()) + "\r\n" + body + "\r\n0\r\n\r\n", 5_000);

        assertProblem(answer, 411, "length_required");
        assertEquals(0, db.orders(MERCHANT));
    }

    /**
     * Two hundred clients that declare a body and stall half-way hold neither the heap nor the payments of
     * others: ordinary payments go through meanwhile, and each stalled request is answered 408 by the body
     * timeout and its connection closed.
     */
    @Test
    void stalledBodies_areAnswered408_whileOrdinaryPaymentsGoOn() throws Exception {
        List<Socket> stalled = new ArrayList<>();
        try {
            for (int i = 0; i < 200; i++) {
                Socket socket = new Socket(InetAddress.getLoopbackAddress(), port);
                socket.setSoTimeout(BODY_TIMEOUT_ANSWER_MS);
                socket.getOutputStream().write(("POST /pay HTTP/1.1\r\nHost: localhost\r\nX-Merchant-Id: " + MERCHANT
                        + "\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"order_no\":")
                        .getBytes(StandardCharsets.US_ASCII));
                stalled.add(socket);
            }

            for (int i = 0; i < 5; i++) {
                Fixtures.pay(payRequest()).then().statusCode(200);
            }

            for (Socket socket : stalled) {
                assertProblem(readAll(socket), 408, "body_timeout");
            }
        } finally {
            for (Socket socket : stalled) {
                socket.close();
            }
        }
        assertEquals(5, db.count("SELECT COUNT(*) FROM payments WHERE merchant_id = ?", MERCHANT));
    }

    /**
     * One request has one answer: a replay that names the merchant or the key twice, or asks for a type
     * the API does not serve, gets the same refusal whether Redis holds the answer or not.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({ "merchant header twice, 401", "key header twice, 400", "Accept text/plain, 406" })
    void oddReplay_getsTheSameAnswer_withTheAnswerCachedOrNot(String variant, int status) {
        PayRequest p = payRequest();
        Fixtures.pay(p).then().statusCode(200);

        Response cached = oddReplay(variant, p);
        db.forgetCachedAnswers();
        Response uncached = oddReplay(variant, p);

        cached.then().statusCode(status).contentType(Problems.MEDIA_TYPE);
        assertEquals(uncached.statusCode(), cached.statusCode());
        assertEquals(uncached.asString(), cached.asString());
    }

    /** RFC 8941 allows two escapes in a string, {@code \"} and {@code \\}: with any other backslash it is no token at all. */
    @Test
    void keyWithAnEscapeNoStringAllows_isRefused_andTheTokenStaysUnused() {
        PayRequest p = payRequest();
        String escaped = "\"" + p.token().substring(0, 10) + "\\" + p.token().substring(10) + "\"";

        as(MERCHANT).header("Idempotency-Key", escaped).body(p.body()).post("/pay")
                .then().statusCode(400).contentType(Problems.MEDIA_TYPE).body("code", equalTo("invalid_idempotency_token"));

        assertTrue(db.tokenUnused(MERCHANT, p.token()));
    }

    @Test
    void emptyContentType_isA400_notAFault() throws IOException {
        String body = "{\"order_no\":\"" + id("ord") + "\",\"amount\":100,\"currency\":\"USD\"}";

        String answer = exchange("POST /orders HTTP/1.1\r\nHost: localhost\r\nX-Merchant-Id: " + MERCHANT
                + "\r\nContent-Type: \r\nContent-Length: " + body.length() + "\r\nConnection: close\r\n\r\n" + body, 5_000);

        assertProblem(answer, 400, "unsupported_media_type");
        assertEquals(0, db.orders(MERCHANT));
    }

    /** A body near the 16 KiB limit is read whole, whichever of the replay route and the REST layer reads it. */
    @Test
    void payBodyJustUnderTheLimit_isReadWhole() {
        PayRequest p = payRequest();
        Map<String, Object> body = p.body();
        body.put("pad", "x".repeat(16 * 1024 - 200));

        as(MERCHANT).header("Idempotency-Key", p.token()).body(body).post("/pay").then().statusCode(200);
    }

    private static Response oddReplay(String variant, PayRequest p) {
        Map<String, Object> body = p.body();
        var request = as(MERCHANT).header("Idempotency-Key", p.token()).body(body);
        return switch (variant) {
            case "merchant header twice" -> request.header("X-Merchant-Id", MERCHANT).post("/pay");
            case "key header twice" -> request.header("Idempotency-Key", p.token()).post("/pay");
            default -> request.accept("text/plain").post("/pay");
        };
    }

    private static void assertProblem(String answer, int status, String code) {
        assertTrue(answer.startsWith("HTTP/1.1 " + status + " "), answer);
        assertTrue(answer.toLowerCase().contains("content-type: application/problem+json"), answer);
        assertTrue(answer.contains("\"code\":\"" + code + "\""), answer);
    }

    /** Sends {@code request} as it is and reads until the server closes, or fails after {@code timeoutMs}. */
    private String exchange(String request, int timeoutMs) throws IOException {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
            socket.setSoTimeout(timeoutMs);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.UTF_8));
            out.flush();
            return readAll(socket);
        }
    }

    private static String readAll(Socket socket) throws IOException {
        ByteArrayOutputStream read = new ByteArrayOutputStream();
        InputStream in = socket.getInputStream();
        byte[] buffer = new byte[4096];
        try {
            int n;
            while ((n = in.read(buffer)) >= 0) {
                read.write(buffer, 0, n);
            }
        } catch (SocketTimeoutException noAnswer) {
            throw new AssertionError("no answer within the bound; read so far: " + read.toString(StandardCharsets.UTF_8));
        }
        return read.toString(StandardCharsets.UTF_8);
    }
}
