package io.payonce.api;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.token;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.notNullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.stream.Stream;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import io.payonce.support.Fixtures;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.ValidatableResponse;

/** Bad input of every kind: a 400 problem+json, no stack trace, no row, no token consumed. */
@QuarkusTest
class BadInputTest {

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
    }

    static Stream<Arguments> badPayBodies() {
        return Stream.of(
                Arguments.of("malformed JSON", "{\"order_no\": \"ORDER\", \"request_no\": \"r1\", \"amount\": 1999"),
                Arguments.of("not an object", "[1, 2, 3]"),
                Arguments.of("null body", "null"),
                Arguments.of("trailing garbage", "{\"order_no\":\"ORDER\",\"request_no\":\"r1\",\"amount\":1999} x"),
                Arguments.of("amount missing", "{\"order_no\":\"ORDER\",\"request_no\":\"r1\"}"),
                Arguments.of("order_no missing", "{\"request_no\":\"r1\",\"amount\":1999}"),
                Arguments.of("request_no missing", "{\"order_no\":\"ORDER\",\"amount\":1999}"),
                Arguments.of("amount zero", "{\"order_no\":\"ORDER\",\"request_no\":\"r1\",\"amount\":0}"),
                Arguments.of("amount negative", "{\"order_no\":\"ORDER\",\"request_no\":\"r1\",\"amount\":-5}"),
                Arguments.of("amount fractional", "{\"order_no\":\"ORDER\",\"request_no\":\"r1\",\"amount\":19.99}"),
                Arguments.of("amount 1999.0", "{\"order_no\":\"ORDER\",\"request_no\":\"r1\",\"amount\":1999.0}"),
                Arguments.of("amount as string", "{\"order_no\":\"ORDER\",\"request_no\":\"r1\",\"amount\":\"1999\"}"),
                Arguments.of("amount beyond 64 bits",
                        "{\"order_no\":\"ORDER\",\"request_no\":\"r1\",\"amount\":9223372036854775808}"),
                Arguments.of("amount boolean", "{\"order_no\":\"ORDER\",\"request_no\":\"r1\",\"amount\":true}"),
                Arguments.of("order_no as number", "{\"order_no\":12345,\"request_no\":\"r1\",\"amount\":1999}"),
                Arguments.of("order_no bad chars", "{\"order_no\":\"ORD ER!\",\"request_no\":\"r1\",\"amount\":1999}"),
                Arguments.of("order_no empty", "{\"order_no\":\"\",\"request_no\":\"r1\",\"amount\":1999}"),
                Arguments.of("request_no too long",
                        "{\"order_no\":\"ORDER\",\"request_no\":\"" + "r".repeat(65) + "\",\"amount\":1999}"),
                Arguments.of("request_no object", "{\"order_no\":\"ORDER\",\"request_no\":{},\"amount\":1999}"),
                Arguments.of("currency lower case",
                        "{\"order_no\":\"ORDER\",\"request_no\":\"r1\",\"amount\":1999,\"currency\":\"usd\"}"),
                Arguments.of("currency too long",
                        "{\"order_no\":\"ORDER\",\"request_no\":\"r1\",\"amount\":1999,\"currency\":\"USDX\"}"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badPayBodies")
    void badPayBody_returns400_consumesNothing(String why, String template) {
        String orderNo = pendingOrder();
        String token = token();

        ValidatableResponse refused = as(MERCHANT).header("Idempotency-Key", token)
                .body(template.replace("ORDER", orderNo)).post("/pay").then();

        assertProblem400(refused);
        assertEquals(0, db.payments(MERCHANT, orderNo));
        assertTrue(db.tokenUnused(MERCHANT, token), "the token is not consumed");
        assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, orderNo));
        Fixtures.pay(token, orderNo, "after_" + orderNo).then().statusCode(200);
    }

    /** Over the contract's 16 KiB, refused from its declared length before the body is read: a 413. */
    @Test
    void oversizedPayBody_returns413_consumesNothing() {
        String orderNo = pendingOrder();
        String token = token();

        as(MERCHANT).header("Idempotency-Key", token)
                .body("{\"order_no\":\"" + orderNo + "\",\"request_no\":\"r1\",\"amount\":1999,\"pad\":\""
                        + "x".repeat(17 * 1024) + "\"}")
                .post("/pay").then().statusCode(413).contentType("application/problem+json")
                .body("code", equalTo("body_too_large"));

        assertEquals(0, db.payments(MERCHANT, orderNo));
        assertTrue(db.tokenUnused(MERCHANT, token), "the token is not consumed");
        Fixtures.pay(token, orderNo, "after_" + orderNo).then().statusCode(200);
    }

    @Test
    void wrongContentType_returns400() {
        String orderNo = pendingOrder();
        String token = token();

        assertProblem400(given().header("X-Merchant-Id", MERCHANT).header("Idempotency-Key", token)
                .contentType("text/plain").body("{\"order_no\":\"" + orderNo + "\",\"request_no\":\"r1\",\"amount\":1999}")
                .post("/pay").then())
                .body("code", equalTo("unsupported_media_type"));
        assertTrue(db.tokenUnused(MERCHANT, token));
    }

    @Test
    void noBody_returns400() {
        assertProblem400(given().header("X-Merchant-Id", MERCHANT).header("Idempotency-Key", token())
                .contentType("application/json").post("/pay").then());
    }

    static Stream<Arguments> badOrderBodies() {
        return Stream.of(
                Arguments.of("malformed", "{\"order_no\":"),
                Arguments.of("amount fractional", "{\"order_no\":\"o1\",\"amount\":1.5,\"currency\":\"USD\"}"),
                Arguments.of("amount zero", "{\"order_no\":\"o1\",\"amount\":0,\"currency\":\"USD\"}"),
                Arguments.of("amount huge", "{\"order_no\":\"o1\",\"amount\":1e30,\"currency\":\"USD\"}"),
                Arguments.of("currency missing", "{\"order_no\":\"o1\",\"amount\":100}"),
                Arguments.of("currency bad", "{\"order_no\":\"o1\",\"amount\":100,\"currency\":\"US\"}"),
                Arguments.of("order_no bad", "{\"order_no\":\"o/1\",\"amount\":100,\"currency\":\"USD\"}"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badOrderBodies")
    void badOrderBody_returns400_leavesNoRow(String why, String body) {
        assertProblem400(as(MERCHANT).body(body).post("/orders").then());
        assertEquals(0, db.orders(MERCHANT));
    }

    @Test
    void malformedIdentifierInPath_returns400() {
        assertProblem400(as(MERCHANT).get("/orders/" + "x".repeat(65)).then());
        assertProblem400(as(MERCHANT).get("/payments/bad!id").then());
    }

    @Test
    void unknownRoute_returns404Problem() {
        as(MERCHANT).get("/nothing-here").then().statusCode(404).contentType("application/problem+json")
                .body("code", equalTo("not_found"));
    }

    private static ValidatableResponse assertProblem400(ValidatableResponse response) {
        return response.statusCode(400)
                .contentType("application/problem+json")
                .body("type", notNullValue())
                .body("title", notNullValue())
                .body("status", equalTo(400))
                .body("detail", notNullValue())
                .body("code", notNullValue())
                .body(not(containsString("Exception")))
                .body(not(containsString("\tat ")));
    }
}
