package io.payonce.observability;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.PayRequest;
import io.restassured.http.ContentType;
import io.restassured.specification.RequestSpecification;

/**
 * The packaged application's log in production's format: one JSON object a line, and the lines of a
 * request carry its request id, merchant and request number, here on a line written after the channel's
 * timeout, a step the request's Vert.x context reaches by a Mutiny timer.
 */
class LogContextIT {

    private static final String MERCHANT = "merchant_logs";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration LOGGED = Duration.ofSeconds(10);

    @Test
    void aPaymentsLogLine_carriesItsRequestIdMerchantAndRequestNo_asJson() throws Exception {
        try (AppProcess app = AppProcess.named("log-context").env("PAYONCE_CHANNEL_TIMEOUT", "1s")) {
            app.start().awaitReady();
            String orderNo = "ord_" + UUID.randomUUID().toString().substring(0, 12);
            String requestNo = "req_" + orderNo;
            on(app).body(Map.of("order_no", orderNo, "amount", 900, "currency", "EUR")).post("/orders")
                    .then().statusCode(201);
            String token = on(app).post("/tokens").then().statusCode(201).extract().path("token");
            // the sandbox answers after the channel timeout: the charge's outcome is unknown, which is logged
            on(app).body(Map.of("mode", "ok", "latency_ms", 2500, "count", 1)).put("/sandbox/behavior")
                    .then().statusCode(200);

            String echoed = new PayRequest(orderNo, requestNo, token, 900).on(on(app))
                    .header("X-Request-Id", "gw-" + requestNo).post("/pay")
                    .then().statusCode(202).extract().header("X-Request-Id");

            assertEquals("gw-" + requestNo, echoed, "the gateway's request id, echoed");
            JsonNode line = Await.until("a log line naming " + requestNo, LOGGED, () -> lineAbout(app, requestNo),
                    Optional::isPresent).orElseThrow();
            JsonNode mdc = line.path("mdc");
            assertEquals("gw-" + requestNo, mdc.path("request_id").asText(), line.toString());
            assertEquals(MERCHANT, mdc.path("merchant_id").asText(), line.toString());
            assertEquals("io.payonce.channel.PaymentChannel", line.path("loggerName").asText(), line.toString());
            assertTrue(line.path("timestamp").asText().matches("\\d{4}-\\d{2}-\\d{2}T.*"), line.toString());
            assertEquals(List.of(), complaintsOfTracing(app), "tracing is off until configured, and says nothing");
        }
    }

    /** WARN and ERROR lines of OpenTelemetry's loggers: a collector looked for, an export failed. */
    private static List<String> complaintsOfTracing(AppProcess app) throws IOException {
        List<String> complaints = new ArrayList<>();
        for (String text : Files.readAllLines(app.log().toPath(), StandardCharsets.UTF_8)) {
            JsonNode line = parse(text);
            String logger = line == null ? "" : line.path("loggerName").asText();
            if ((logger.startsWith("io.opentelemetry") || logger.startsWith("io.quarkus.opentelemetry"))
                    && List.of("WARN", "ERROR").contains(line.path("level").asText())) {
                complaints.add(text);
            }
        }
        return complaints;
    }

    /** The first line whose log context names the request number; every line read must be a JSON object. */
    private static Optional<JsonNode> lineAbout(AppProcess app, String requestNo) {
        List<String> notJson = new ArrayList<>();
        Optional<JsonNode> found = Optional.empty();
        try {
            for (String text : Files.readAllLines(app.log().toPath(), StandardCharsets.UTF_8)) {
                JsonNode line = parse(text);
                if (line == null) {
                    notJson.add(text);
                } else if (found.isEmpty() && requestNo.equals(line.path("mdc").path("request_no").asText())) {
                    found = Optional.of(line);
                }
            }
        } catch (IOException e) {
            throw new AssertionError("reading " + app.log(), e);
        }
        assertTrue(notJson.isEmpty(), "lines that are not JSON objects in " + app.log() + ": " + notJson);
        return found;
    }

    private static JsonNode parse(String text) {
        try {
            JsonNode line = JSON.readTree(text);
            return line != null && line.isObject() ? line : null;
        } catch (IOException notJson) {
            return null;
        }
    }

    private static RequestSpecification on(AppProcess app) {
        return given().baseUri("http://127.0.0.1").port(app.port()).header("X-Merchant-Id", MERCHANT)
                .contentType(ContentType.JSON);
    }
}
