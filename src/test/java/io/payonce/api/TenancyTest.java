package io.payonce.api;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.OTHER_MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.pay;
import static io.payonce.support.Fixtures.payBody;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.token;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.UUID;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Fixtures;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;

/** Merchant B can neither use nor learn anything of merchant A's tokens, orders or payments. */
@QuarkusTest
class TenancyTest {

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
    }

    @Test
    void merchantBCannotSeeMerchantAsOrder() {
        String orderNo = pendingOrder(MERCHANT);

        as(OTHER_MERCHANT).get("/orders/" + orderNo).then().statusCode(404).body("code", equalTo("order_not_found"));
    }

    @Test
    void merchantBCannotSeeMerchantAsPayment() {
        String orderNo = pendingOrder(MERCHANT);
        String requestNo = id("req");
        pay(token(MERCHANT), orderNo, requestNo).then().statusCode(200);

        as(OTHER_MERCHANT).get("/payments/" + requestNo).then().statusCode(404)
                .body("code", equalTo("payment_not_found"));
        as(OTHER_MERCHANT).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().statusCode(200).body("charges", equalTo(0));
    }

    @Test
    void merchantBCannotUseMerchantAsToken_evenForAUsedOne() {
        String orderNo = pendingOrder(MERCHANT);
        String token = token(MERCHANT);
        String requestNo = id("req");
        pay(token, orderNo, requestNo).then().statusCode(200);
        String ordersOfB = pendingOrder(OTHER_MERCHANT);

        String unusedAnswer = pay(OTHER_MERCHANT, "tok_" + "B".repeat(32), payBody(ordersOfB, requestNo, AMOUNT))
                .then().statusCode(400).extract().asString();
        String usedAnswer = pay(OTHER_MERCHANT, token, payBody(orderNo, requestNo, AMOUNT))
                .then().statusCode(400).body("code", equalTo("invalid_idempotency_token")).extract().asString();

        assertEquals(unusedAnswer, usedAnswer, "a foreign token looks exactly like an unknown one");
    }

    /**
     * A Stripe-style client's first call, its own UUID as the key while client keys are off: the refusal says
     * where keys come from and that client keys are a setting, in the words it has for any refused key, so
     * it tells nothing of whether the key is someone's.
     */
    @Test
    void clientMadeKey_isToldWhereKeysComeFrom_inTheWordsOfAnyRefusedKey() {
        String orderNo = pendingOrder(MERCHANT);
        String usedByA = token(MERCHANT);
        pay(usedByA, orderNo, id("req")).then().statusCode(200);
        String ordersOfB = pendingOrder(OTHER_MERCHANT);

        String uuidAnswer = pay(OTHER_MERCHANT, UUID.randomUUID().toString(), payBody(ordersOfB, id("req"), AMOUNT))
                .then().statusCode(400).body("code", equalTo("invalid_idempotency_token"))
                .body("detail", containsString("POST /tokens"))
                .body("detail", containsString("payonce.idempotency.accept-client-keys"))
                .extract().asString();
        String foreignAnswer = pay(OTHER_MERCHANT, usedByA, payBody(ordersOfB, id("req"), AMOUNT))
                .then().statusCode(400).extract().asString();
        String malformedAnswer = pay(OTHER_MERCHANT, "\"tok_\\q\"", payBody(ordersOfB, id("req"), AMOUNT))
                .then().statusCode(400).extract().asString();

        assertEquals(uuidAnswer, foreignAnswer, "a client's own key and another merchant's token, alike");
        assertEquals(uuidAnswer, malformedAnswer, "a client's own key and a malformed one, alike");
    }

    @Test
    void merchantBCannotPayMerchantAsOrder() {
        String orderNo = pendingOrder(MERCHANT);

        pay(OTHER_MERCHANT, token(OTHER_MERCHANT), payBody(orderNo, id("req"), AMOUNT))
                .then().statusCode(404).body("code", equalTo("order_not_found"));
        assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, orderNo));
    }

    @Test
    void sameNumbersUnderTwoMerchants_areIndependent() {
        String orderNo = id("ord");
        String requestNo = id("req");
        for (String merchant : new String[] { MERCHANT, OTHER_MERCHANT }) {
            as(merchant).body(Map.of("order_no", orderNo, "amount", AMOUNT, "currency", "USD")).post("/orders")
                    .then().statusCode(201);
        }

        pay(MERCHANT, token(MERCHANT), payBody(orderNo, requestNo, AMOUNT)).then().statusCode(200);
        pay(OTHER_MERCHANT, token(OTHER_MERCHANT), payBody(orderNo, requestNo, AMOUNT)).then().statusCode(200);

        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, orderNo));
        assertEquals(1, Fixtures.ledgerCharges(OTHER_MERCHANT, orderNo));
    }

    @Test
    void everyBusinessEndpoint_requiresTheMerchantHeader() {
        given().contentType("application/json").body("{}").post("/orders").then().statusCode(401);
        given().get("/orders/o1").then().statusCode(401);
        given().post("/tokens").then().statusCode(401);
        given().contentType("application/json").body("{}").post("/pay").then().statusCode(401)
                .contentType("application/problem+json").body("code", equalTo("merchant_required"));
        given().get("/payments/r1").then().statusCode(401);
        given().queryParam("order_no", "o1").get("/sandbox/charges").then().statusCode(401);
    }
}
