package io.payonce.api;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static org.hamcrest.Matchers.empty;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasSize;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Fixtures;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;

@QuarkusTest
class OrderResourceTest {

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
    }

    @Test
    void createOrder_returns201WithPendingOrder() {
        String orderNo = id("ord");
        as(MERCHANT).body(Map.of("order_no", orderNo, "amount", 1999, "currency", "EUR"))
                .post("/orders")
                .then().statusCode(201)
                .body("order_no", equalTo(orderNo))
                .body("amount", equalTo(1999))
                .body("currency", equalTo("EUR"))
                .body("status", equalTo("PENDING"))
                .body("version", equalTo(0))
                .body("payments", empty());
    }

    @Test
    void sameOrderAgain_returns200WithSameBody() {
        String orderNo = id("ord");
        Map<String, Object> body = Map.of("order_no", orderNo, "amount", 500, "currency", "USD");
        String first = as(MERCHANT).body(body).post("/orders").then().statusCode(201).extract().asString();

        String again = as(MERCHANT).body(body).post("/orders").then().statusCode(200).extract().asString();

        assertEquals(first, again);
        assertEquals(1, db.orders(MERCHANT));
    }

    @Test
    void sameOrderNoWithOtherAmount_returns409OrderConflict() {
        String orderNo = id("ord");
        as(MERCHANT).body(Map.of("order_no", orderNo, "amount", 500, "currency", "USD")).post("/orders")
                .then().statusCode(201);

        as(MERCHANT).body(Map.of("order_no", orderNo, "amount", 501, "currency", "USD")).post("/orders")
                .then().statusCode(409)
                .contentType("application/problem+json")
                .body("code", equalTo("order_conflict"));
        as(MERCHANT).body(Map.of("order_no", orderNo, "amount", 500, "currency", "EUR")).post("/orders")
                .then().statusCode(409).body("code", equalTo("order_conflict"));
    }

    @Test
    void getOrder_showsStatusVersionAndPayments() {
        String orderNo = Fixtures.pendingOrder();
        String requestNo = id("req");
        Fixtures.pay(Fixtures.token(), orderNo, requestNo).then().statusCode(200);

        as(MERCHANT).get("/orders/" + orderNo)
                .then().statusCode(200)
                .body("status", equalTo("PAID"))
                .body("version", equalTo(2))
                .body("payments", hasSize(1))
                .body("payments[0].request_no", equalTo(requestNo))
                .body("payments[0].status", equalTo("SUCCEEDED"));
    }

    @Test
    void unknownOrder_returns404OrderNotFound() {
        as(MERCHANT).get("/orders/" + id("nope"))
                .then().statusCode(404)
                .contentType("application/problem+json")
                .body("code", equalTo("order_not_found"))
                .body("type", org.hamcrest.Matchers.notNullValue())
                .body("title", org.hamcrest.Matchers.notNullValue())
                .body("status", equalTo(404))
                .body("detail", org.hamcrest.Matchers.notNullValue());
    }
}
