package io.payonce.gateway;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.payonce.support.AppProcess;
import io.payonce.support.Gateway;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;

/**
 * The shipped gateway in front of two instances waits as long as the service's own bounds and tries another
 * instance only for a request the first never received: a charge slower than any client would like, but
 * within the channel timeout the instances were given, reaches the client as the service's one answer (sent
 * once, charged once), and an instance that refuses connections is passed over. The client authenticates
 * with its API key; the merchant it pays as is the key's.
 */
class GatewayRetryIT {

    private static final String MERCHANT = "merchant_gateway";
    /** Above the 6 s charge: the instances wait for the channel this long, and the gateway follows. */
    private static final String CHANNEL_TIMEOUT = "8s";
    private static final int SLOW_CHARGE_MS = 6_000;

    private static AppProcess a;
    private static AppProcess b;
    private static Gateway gateway;

    @BeforeAll
    static void start() throws Exception {
        Gateway.assumeInstalled();
        a = AppProcess.named("gateway-a").env("PAYONCE_CHANNEL_TIMEOUT", CHANNEL_TIMEOUT);
        b = AppProcess.named("gateway-b").env("PAYONCE_CHANNEL_TIMEOUT", CHANNEL_TIMEOUT).channel(a.sandboxUrl());
        AppProcess.startAll(a, b);
        gateway = Gateway.start(a, b, MERCHANT);
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (gateway != null) {
            gateway.close();
        }
        AppProcess.closeAll(a, b);
    }

    @Test
    void chargeOf6s_reachesTheClientAsTheServicesAnswer_sentOnce_chargedOnce() {
        String orderNo = newOrder();
        String requestNo = "req_" + orderNo;
        String token = direct(a).post("/tokens").then().statusCode(201).extract().path("token");
        direct(a).body(Map.of("mode", "ok", "latency_ms", SLOW_CHARGE_MS, "count", 1)).put("/sandbox/behavior")
                .then().statusCode(200);

        // the client names no merchant: the gateway sets it from the API key
        Response paid = gateway.as(MERCHANT).header("Idempotency-Key", token).contentType(ContentType.JSON)
                .body(Map.of("order_no", orderNo, "request_no", requestNo, "amount", 2500)).post("/pay");

        assertEquals(200, paid.statusCode(), paid.asString());
        assertTrue(paid.contentType().startsWith("application/json"), paid.contentType());
        assertEquals("PAID", paid.path("status"));
        assertEquals(requestNo, paid.path("request_no"));
        assertNull(paid.header("Idempotent-Replayed"), "the answer of the execution itself, no copy's");
        Map<String, Integer> ledger = direct(a).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().statusCode(200).extract().path("");
        assertEquals(1, ledger.get("charges"));
        assertEquals(1, ledger.get("attempts"), "the POST reached the channel once");
        List<?> payments = direct(b).get("/orders/" + orderNo).then().extract().path("payments");
        assertEquals(1, payments.size());
    }

    /**
     * nginx picks the upstreams in turn, so of two requests through a gateway whose first upstream refuses
     * connections, one at least is sent there first: each is answered by the instance.
     */
    @Test
    void instanceRefusingConnections_isPassedOver_eachRequestAnswered() throws Exception {
        try (Gateway oneDown = Gateway.start(List.of(AppProcess.freePort(), a.port()), null, MERCHANT)) {
            for (int i = 0; i < 2; i++) {
                String orderNo = "ord_" + UUID.randomUUID().toString().substring(0, 12);

                oneDown.as(MERCHANT).contentType(ContentType.JSON)
                        .body(Map.of("order_no", orderNo, "amount", 100, "currency", "EUR")).post("/orders")
                        .then().statusCode(201);

                direct(a).get("/orders/" + orderNo).then().statusCode(200);
            }
        }
    }

    private static String newOrder() {
        String orderNo = "ord_" + UUID.randomUUID().toString().substring(0, 12);
        direct(a).body(Map.of("order_no", orderNo, "amount", 2500, "currency", "EUR")).post("/orders")
                .then().statusCode(201);
        return orderNo;
    }

    private static RequestSpecification direct(AppProcess app) {
        return given().baseUri("http://127.0.0.1").port(app.port()).header("X-Merchant-Id", MERCHANT)
                .contentType(ContentType.JSON);
    }
}
