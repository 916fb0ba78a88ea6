package io.payonce.gateway;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
 * The shipped nginx example ({@code src/main/docker/nginx/payonce.conf}) as a caller's only way in to one
 * instance: the merchant the instance sees is the one the caller's API key belongs to; a caller without a
 * valid key, or naming another merchant than its key's, is refused before the instance sees anything; the
 * operations endpoints and the sandbox are not routed. The instance, asked directly as each merchant, shows
 * what the gateway let through.
 */
class GatewayAuthIT {

    private static final String MERCHANT_A = "merchant_gw_a";
    private static final String MERCHANT_B = "merchant_gw_b";

    private static AppProcess app;
    private static Gateway gateway;

    @BeforeAll
    static void start() throws Exception {
        Gateway.assumeInstalled();
        app = AppProcess.named("gateway-auth");
        AppProcess.startAll(app);
        // both upstream slots on the one instance: whatever nginx picks, it is this one
        gateway = Gateway.start(app, app, MERCHANT_A, MERCHANT_B);
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (gateway != null) {
            gateway.close();
        }
        AppProcess.closeAll(app);
    }

    @Test
    void noKey_claimingAMerchant_isRefused_nothingCreated() {
        String orderNo = orderNo();

        Response refused = gateway.request().header("X-Merchant-Id", MERCHANT_A).contentType(ContentType.JSON)
                .body(order(orderNo)).post("/orders");

        assertProblem(refused, 401, "unauthenticated");
        assertNoOrder(MERCHANT_A, orderNo);
    }

    @Test
    void unknownKey_claimingAMerchant_isRefused_nothingCreated() {
        String orderNo = orderNo();

        Response refused = gateway.request().header("X-Api-Key", Gateway.unknownKey())
                .header("X-Merchant-Id", MERCHANT_A).contentType(ContentType.JSON).body(order(orderNo)).post("/orders");

        assertProblem(refused, 401, "unauthenticated");
        assertNoOrder(MERCHANT_A, orderNo);
    }

    @Test
    void keyOfA_namingB_isRefused_nothingCreatedForEither() {
        String orderNo = orderNo();

        Response refused = gateway.as(MERCHANT_A).header("X-Merchant-Id", MERCHANT_B).contentType(ContentType.JSON)
                .body(order(orderNo)).post("/orders");

        assertProblem(refused, 401, "merchant_mismatch");
        assertNoOrder(MERCHANT_A, orderNo);
        assertNoOrder(MERCHANT_B, orderNo);
    }

    @Test
    void keyOfA_withoutMerchantHeader_actsAsA() {
        String orderNo = orderNo();

        gateway.as(MERCHANT_A).contentType(ContentType.JSON).body(order(orderNo)).post("/orders")
                .then().statusCode(201);

        direct(MERCHANT_A).get("/orders/" + orderNo).then().statusCode(200);
        assertNoOrder(MERCHANT_B, orderNo);
        gateway.as(MERCHANT_A).get("/orders/" + orderNo).then().statusCode(200);
        gateway.as(MERCHANT_B).get("/orders/" + orderNo).then().statusCode(404);
    }

    @Test
    void keyOfA_namingA_actsAsA() {
        String orderNo = orderNo();

        gateway.as(MERCHANT_A).header("X-Merchant-Id", MERCHANT_A).contentType(ContentType.JSON).body(order(orderNo))
                .post("/orders").then().statusCode(201);

        direct(MERCHANT_A).get("/orders/" + orderNo).then().statusCode(200);
        assertNoOrder(MERCHANT_B, orderNo);
    }

    @Test
    void operationsEndpoints_onlyOnTheManagementInterface() {
        for (String path : List.of("/q/health/ready", "/q/health/live", "/q/metrics", "/q/openapi")) {
            // the gateway's own 404, not the instance's answer
            assertProblem(gateway.as(MERCHANT_A).get(path), 404, "not_found");
            // nor on the business port, whatever reaches it
            assertProblem(given().baseUri("http://127.0.0.1").port(app.port()).get(path), 404, "not_found");
            assertEquals(200, app.management().get(path).statusCode(), path);
        }
    }

    @Test
    void sandboxLedger_notRoutedThroughGateway_servedDirectly() {
        String orderNo = orderNo();

        Response refused = gateway.as(MERCHANT_A).queryParam("order_no", orderNo).get("/sandbox/charges");

        assertProblem(refused, 404, "not_found");
        direct(MERCHANT_A).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().statusCode(200).body("order_no", equalTo(orderNo));
    }

    @Test
    void sandboxBehavior_notRoutedThroughGateway_instanceKeepsItsBehaviour() {
        Response refused = gateway.as(MERCHANT_A).contentType(ContentType.JSON)
                .body(Map.of("mode", "decline", "latency_ms", 0, "count", 5)).put("/sandbox/behavior");

        assertProblem(refused, 404, "not_found");
        Response behaviour = direct(MERCHANT_A).get("/sandbox/behavior");
        assertEquals(200, behaviour.statusCode(), behaviour.asString());
        assertEquals("ok", behaviour.path("mode"));
        assertEquals(0, (int) behaviour.path("count"));
    }

    /** A problem+json answer with every member the contract names. */
    private static void assertProblem(Response response, int status, String code) {
        String body = response.asString();
        assertEquals(status, response.statusCode(), body);
        assertTrue(response.contentType().startsWith("application/problem+json"), response.contentType());
        assertEquals("urn:payonce:problem:" + code, response.path("type"), body);
        assertFalse(((String) response.path("title")).isBlank(), body);
        assertEquals(status, (int) response.path("status"), body);
        assertFalse(((String) response.path("detail")).isBlank(), body);
        assertEquals(code, response.path("code"), body);
    }

    /** The instance itself, asked as {@code merchant}, knows no such order. */
    private static void assertNoOrder(String merchant, String orderNo) {
        Response response = direct(merchant).get("/orders/" + orderNo);
        assertEquals(404, response.statusCode(), merchant + " has " + orderNo + ": " + response.asString());
        assertEquals("order_not_found", response.path("code"));
    }

    /** The instance without the gateway, as the gateway would call it for {@code merchant}. */
    private static RequestSpecification direct(String merchant) {
        return given().baseUri("http://127.0.0.1").port(app.port()).header("X-Merchant-Id", merchant)
                .contentType(ContentType.JSON);
    }

    private static Map<String, Object> order(String orderNo) {
        return Map.of("order_no", orderNo, "amount", 1200, "currency", "EUR");
    }

    private static String orderNo() {
        return "ord_" + UUID.randomUUID().toString().substring(0, 12);
    }
}
