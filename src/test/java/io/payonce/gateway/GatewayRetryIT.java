package io.payonce.gateway;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

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
 * The shipped nginx example ({@code src/main/docker/nginx/payonce.conf}) in front of two instances:
 * nginx gives up on a slow charge and replays the POST on the other instance, which waits for the
 * first copy and answers with its result. One request from the client, one charge, one answer. The
 * client authenticates with its API key; the merchant it pays as is the key's.
 */
class GatewayRetryIT {

    private static final String MERCHANT = "merchant_gateway";

    private static AppProcess a;
    private static AppProcess b;
    private static Gateway gateway;

    @BeforeAll
    static void start() throws Exception {
        Gateway.assumeInstalled();
        a = AppProcess.named("gateway-a");
        b = AppProcess.named("gateway-b").channel(a.sandboxUrl());
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

    /** One payment on each instance first, so class loading and client set-up do not count in the timing. */
    private static void warmUp(AppProcess app) {
        String orderNo = "warm_" + UUID.randomUUID().toString().substring(0, 12);
        direct(app).body(Map.of("order_no", orderNo, "amount", 1, "currency", "EUR")).post("/orders");
        String token = direct(app).post("/tokens").then().extract().path("token");
        direct(app).header("Idempotency-Key", token).body(Map.of("order_no", orderNo, "request_no", orderNo, "amount", 1))
                .post("/pay").then().statusCode(200);
    }

    @Test
    void gatewayRetriesASlowCharge_clientGetsTheOneAnswer_ledgerOneCharge() {
        warmUp(a);
        warmUp(b);
        String orderNo = "ord_" + UUID.randomUUID().toString().substring(0, 12);
        String requestNo = "req_" + orderNo;
        direct(a).body(Map.of("order_no", orderNo, "amount", 2500, "currency", "EUR")).post("/orders")
                .then().statusCode(201);
        String token = direct(a).post("/tokens").then().statusCode(201).extract().path("token");
        // slower than nginx's 1.5 s read timeout, well inside the channel timeout
        direct(a).body(Map.of("mode", "ok", "latency_ms", 2000, "count", 2)).put("/sandbox/behavior")
                .then().statusCode(200);

        // the client names no merchant: the gateway sets it from the API key
        Response viaGateway = gateway.as(MERCHANT).header("Idempotency-Key", token).contentType(ContentType.JSON)
                .body(Map.of("order_no", orderNo, "request_no", requestNo, "amount", 2500)).post("/pay");

        assertEquals(200, viaGateway.statusCode(), viaGateway.asString());
        assertEquals("PAID", viaGateway.path("status"));
        assertEquals("true", viaGateway.header("Idempotent-Replayed"), "the retried copy waited for the first");
        String retried = direct(b).header("Idempotency-Key", token)
                .body(Map.of("order_no", orderNo, "request_no", requestNo, "amount", 2500)).post("/pay")
                .then().statusCode(200).extract().asString();
        assertEquals(viaGateway.asString(), retried);
        Map<String, Integer> ledger = direct(a).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().extract().path("");
        assertEquals(1, ledger.get("charges"));
        assertEquals(1, ledger.get("attempts"), "the replayed POST never reached the channel");
        List<?> payments = direct(b).get("/orders/" + orderNo).then().extract().path("payments");
        assertEquals(1, payments.size());
    }

    private static RequestSpecification direct(AppProcess app) {
        return given().baseUri("http://127.0.0.1").port(app.port()).header("X-Merchant-Id", MERCHANT)
                .contentType(ContentType.JSON);
    }
}
