package io.payonce;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Concurrently;
import io.payonce.support.Operations;
import io.payonce.support.PayRequest;
import io.restassured.http.ContentType;

/**
 * Two instances of the packaged application on one MySQL and one Redis: duplicates split across
 * them all wait for whichever instance owns the request and receive its answer. Runs after
 * {@code package} (failsafe), against the jar a user deploys.
 */
class MultiInstanceIT {

    private static final String MERCHANT = "merchant_multi";
    private static AppProcess instanceA;
    private static AppProcess instanceB;
    private static int portA;
    private static int portB;

    @BeforeAll
    static void startTwoInstances() throws Exception {
        instanceA = AppProcess.named("multi-instance-a");
        // both instances charge through instance A's sandbox, so they share one channel and one ledger
        instanceA.channel(instanceA.sandboxUrl()).env("PAYONCE_CHANNEL_TIMEOUT", "3s");
        instanceB = AppProcess.named("multi-instance-b").channel(instanceA.sandboxUrl())
                .env("PAYONCE_CHANNEL_TIMEOUT", "3s");
        AppProcess.startAll(instanceA, instanceB);
        portA = instanceA.port();
        portB = instanceB.port();
    }

    @AfterAll
    static void stopInstances() throws InterruptedException {
        AppProcess.closeAll(instanceA, instanceB);
    }

    @Test
    void duplicatesSplitAcrossInstances_allReceiveTheOwnersAnswer() {
        String orderNo = "ord_" + UUID.randomUUID().toString().substring(0, 12);
        on(portA).body(Map.of("order_no", orderNo, "amount", 4200, "currency", "EUR")).post("/orders")
                .then().statusCode(201);
        String token = on(portB).post("/tokens").then().statusCode(201).extract().path("token");
        PayRequest request = new PayRequest(orderNo, "req_" + UUID.randomUUID().toString().substring(0, 12), token, 4200);
        on(portA).body(Map.of("mode", "ok", "latency_ms", 700, "count", 1)).put("/sandbox/behavior")
                .then().statusCode(200);
        double replaysBefore = replays(instanceA) + replays(instanceB);

        int copies = 20;
        List<Answer> answers = Concurrently.all(copies, Duration.ofSeconds(30),
                (group, copy) -> Answer.of(() -> request.on(on(copy % 2 == 0 ? portA : portB)).post("/pay")));

        Set<String> distinct = new HashSet<>();
        answers.forEach(a -> distinct.add(a.status() + " " + a.body()));
        assertEquals(1, distinct.size(), "every copy on either instance got the same answer: " + distinct);
        assertEquals(200, answers.get(0).status());
        assertEquals("PAID", on(portB).get("/orders/" + orderNo).then().extract().path("status"));
        assertEquals(1, on(portB).get("/orders/" + orderNo).then().extract().<List<?>>path("payments").size());
        assertEquals(1, (int) on(portA).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().extract().path("charges"));
        assertEquals(copies - 1, replays(instanceA) + replays(instanceB) - replaysBefore, 0.001,
                "all but the owner's copy were replays");
    }

    @Test
    void tokenSignedByOneInstance_paysOnTheOther_andIsRefusedForAnotherMerchant() {
        String orderNo = "ord_" + UUID.randomUUID().toString().substring(0, 12);
        on(portB).body(Map.of("order_no", orderNo, "amount", 100, "currency", "USD")).post("/orders")
                .then().statusCode(201);
        String token = on(portA).post("/tokens").then().statusCode(201).extract().path("token");
        Map<String, Object> body = Map.of("order_no", orderNo, "request_no", "r_" + orderNo, "amount", 100);

        given().baseUri("http://127.0.0.1").port(portB).header("X-Merchant-Id", "other_merchant")
                .contentType(ContentType.JSON).header("Idempotency-Key", token).body(body).post("/pay")
                .then().statusCode(400).body("code", equalTo("invalid_idempotency_token"));
        on(portB).header("Idempotency-Key", token).body(body).post("/pay")
                .then().statusCode(200).body("status", equalTo("PAID"));
    }

    @Test
    void answerCachedByOneInstance_isReplayedByTheOther() {
        String orderNo = "ord_" + UUID.randomUUID().toString().substring(0, 12);
        on(portA).body(Map.of("order_no", orderNo, "amount", 100, "currency", "USD")).post("/orders")
                .then().statusCode(201);
        String token = on(portA).post("/tokens").then().extract().path("token");
        Map<String, Object> body = Map.of("order_no", orderNo, "request_no", "r_" + orderNo, "amount", 100);
        String first = on(portA).header("Idempotency-Key", token).body(body).post("/pay")
                .then().statusCode(200).extract().asString();

        String onB = on(portB).header("Idempotency-Key", token).body(body).post("/pay")
                .then().statusCode(200).header("Idempotent-Replayed", "true").extract().asString();

        assertEquals(first, onB);
    }

    private static io.restassured.specification.RequestSpecification on(int port) {
        return given().baseUri("http://127.0.0.1").port(port).header("X-Merchant-Id", MERCHANT)
                .contentType(ContentType.JSON);
    }

    /** All replays the instance served, whatever their source. */
    private static double replays(AppProcess instance) {
        return Operations.metricSum(instance, "payonce_replays_total");
    }
}
