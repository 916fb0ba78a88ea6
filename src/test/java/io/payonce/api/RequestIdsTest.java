package io.payonce.api;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import io.quarkus.test.junit.QuarkusTest;

/** Every answer names its request: by the gateway's id when it sent a well-formed one, else by a new one. */
@QuarkusTest
class RequestIdsTest {

    private static final String HEADER = "X-Request-Id";
    private static final String NEW_ID = "[0-9a-f]{32}";

    @Test
    void aGatewaysRequestId_isEchoed() {
        String id = as(MERCHANT).header(HEADER, "7f3c9a1e-5b2d-4c8e-9f10-2a3b4c5d6e7f").post("/tokens")
                .then().statusCode(201).extract().header(HEADER);

        assertEquals("7f3c9a1e-5b2d-4c8e-9f10-2a3b4c5d6e7f", id);
    }

    @Test
    void noRequestId_getsANewOne_eachRequestItsOwn() {
        String first = as(MERCHANT).post("/tokens").then().statusCode(201).extract().header(HEADER);
        String second = as(MERCHANT).post("/tokens").then().statusCode(201).extract().header(HEADER);

        assertTrue(first.matches(NEW_ID), first);
        assertTrue(second.matches(NEW_ID), second);
        assertNotEquals(first, second);
    }

    @Test
    void aMalformedOrRepeatedRequestId_isReplaced() {
        String spaced = as(MERCHANT).header(HEADER, "id with spaces").post("/tokens").then().extract().header(HEADER);
        String tooLong = as(MERCHANT).header(HEADER, "a".repeat(129)).post("/tokens").then().extract().header(HEADER);
        String twice = as(MERCHANT).header(HEADER, "one").header(HEADER, "two").post("/tokens").then().extract()
                .header(HEADER);

        assertTrue(spaced.matches(NEW_ID), spaced);
        assertTrue(tooLong.matches(NEW_ID), tooLong);
        assertTrue(twice.matches(NEW_ID), twice);
    }

    @Test
    void aRefusalAheadOfEveryRoute_carriesTheId() {
        String id = given().header(HEADER, "gw-refused-1").header("X-Merchant-Id", "a").header("X-Merchant-Id", "b")
                .post("/pay").then().statusCode(401).extract().header(HEADER);

        assertEquals("gw-refused-1", id);
    }
}
