package io.payonce.api;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.Base64;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Fixtures;
import io.payonce.support.TestDatabase;

import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.ExtractableResponse;
import io.restassured.response.Response;

@QuarkusTest
class TokenResourceTest {

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
    }

    @Test
    void issueToken_returnsUrlSafeRandomTokenValidFor24Hours() {
        ExtractableResponse<Response> issued = given().header("X-Merchant-Id", MERCHANT).post("/tokens")
                .then().statusCode(201).extract();
        String token = issued.path("token");
        Instant expiresAt = Instant.parse(issued.path("expires_at"));

        assertTrue(token.matches("[A-Za-z0-9_-]{1,80}"), token);
        byte[] decoded = Base64.getUrlDecoder().decode(token.substring("tok_".length()));
        // 128 random bits, then the expiry and the MAC
        assertTrue(decoded.length * 8 >= 128 + 64 + 120, "random part, expiry and MAC");
        Duration lifetime = Duration.between(Instant.now(), expiresAt);
        assertTrue(lifetime.compareTo(Duration.ofHours(23).plusMinutes(59)) > 0
                && lifetime.compareTo(Duration.ofHours(24).plusMinutes(1)) < 0, lifetime.toString());
    }

    @Test
    void issuingToken_writesNoRow_untilItsFirstUse() {
        String token = Fixtures.token();
        assertNull(db.tokenState(MERCHANT, token), "issuing is signing, no database write");

        Fixtures.pay(token, Fixtures.pendingOrder(), Fixtures.id("req")).then().statusCode(200);

        assertEquals("COMPLETED", db.tokenState(MERCHANT, token));
    }

    @Test
    void tamperedToken_isRefusedLikeAnUnknownOne() {
        String token = Fixtures.token();
        char last = token.charAt(10);
        String tampered = token.substring(0, 10) + (last == 'A' ? 'B' : 'A') + token.substring(11);
        String orderNo = Fixtures.pendingOrder();

        Fixtures.pay(tampered, orderNo, Fixtures.id("req")).then().statusCode(400)
                .body("code", equalTo("invalid_idempotency_token"));

        assertNull(db.tokenState(MERCHANT, tampered));
        assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, orderNo));
    }

    @Test
    void twoTokens_areDifferent() {
        String a = given().header("X-Merchant-Id", MERCHANT).post("/tokens").then().extract().path("token");
        String b = given().header("X-Merchant-Id", MERCHANT).post("/tokens").then().extract().path("token");
        assertNotEquals(a, b);
    }

    @Test
    void noMerchantHeader_returns401() {
        given().post("/tokens").then().statusCode(401)
                .contentType("application/problem+json")
                .body("code", equalTo("merchant_required"));
    }

    @Test
    void malformedMerchantHeader_returns401() {
        String status = given().header("X-Merchant-Id", "bad merchant!").post("/tokens")
                .then().statusCode(401).extract().path("code");
        assertEquals("merchant_required", status);
        given().header("X-Merchant-Id", "m".repeat(65)).post("/tokens").then().statusCode(401);
    }
}
