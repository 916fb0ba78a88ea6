package io.payonce.operations;

import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.pay;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.token;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;

import java.util.List;

import org.junit.jupiter.api.Test;

import io.payonce.support.Fixtures;
import io.payonce.support.Operations;
import io.quarkus.test.junit.QuarkusTest;

/** Health, metrics and the OpenAPI document, as an operator and a client developer see them. */
@QuarkusTest
class OperationsEndpointsTest {

    @Test
    void liveness_isUp() {
        Operations.management().get("/q/health/live").then().statusCode(200).body("status", equalTo("UP"));
    }

    @Test
    void readiness_isUpWithTheDatabaseAndReportsRedis() {
        Operations.management().get("/q/health/ready").then().statusCode(200).body("status", equalTo("UP"))
                .body(containsString("Database connections health check"))
                .body("checks.find { it.name == 'Redis fast path' }.data.redis", equalTo("up"));
    }

    @Test
    void metrics_countReplaysAndDuplicatesStoppedPerLayer() {
        Fixtures.sandboxNormal();
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        pay(token, orderNo, requestNo).then().statusCode(200);
        pay(token, orderNo, requestNo).then().statusCode(200);

        Operations.management().get("/q/metrics").then().statusCode(200)
                .body(containsString("payonce_duplicates_stopped_total{layer=\"redis\"}"))
                .body(containsString("payonce_replays_total{source=\"redis\"}"));
    }

    @Test
    void operationsEndpoints_notOnTheBusinessPort() {
        for (String path : List.of("/q/health/ready", "/q/health/live", "/q/metrics", "/q/openapi")) {
            given().get(path).then().statusCode(404).contentType("application/problem+json")
                    .body("code", equalTo("not_found"));
        }
    }

    @Test
    void openapi_documentsTheApi() {
        Operations.management().get("/q/openapi").then().statusCode(200)
                .body(containsString("/pay"))
                .body(containsString("/orders/{order_no}"))
                .body(containsString("/tokens"))
                .body(containsString("/payments/{request_no}"))
                .body(containsString("PayRequest"));
    }
}
