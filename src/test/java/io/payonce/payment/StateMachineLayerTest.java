package io.payonce.payment;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.ledgerAttempts;
import static io.payonce.support.Fixtures.ledgerCharges;
import static io.payonce.support.Fixtures.orderStatus;
import static io.payonce.support.Fixtures.orderVersion;
import static io.payonce.support.Fixtures.payAnswer;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.sandbox;
import static io.payonce.support.Fixtures.sandboxNormal;
import static io.payonce.support.Fixtures.token;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Answer;
import io.payonce.support.Concurrently;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;

/**
 * Layer 3 alone: requests for one order that layers 1 and 2 cannot tell apart as duplicates (each has
 * its own token and its own request number), so only the order's conditional transition decides.
 */
@QuarkusTest
class StateMachineLayerTest {

    private static final int REQUESTS = 20;
    private static final Duration BOUND = Duration.ofSeconds(20);

    @Inject
    TestDatabase db;

    @BeforeEach
    void setUp() {
        db.clean();
        sandboxNormal();
    }

    @Test
    void concurrentRequestsWithOwnTokens_onlyOnePaysTheOrder() {
        String orderNo = pendingOrder();
        List<String> tokens = IntStream.range(0, REQUESTS).mapToObj(i -> token()).toList();
        List<String> requestNos = IntStream.range(0, REQUESTS).mapToObj(i -> id("req")).toList();

        List<Answer> answers = Concurrently.all(REQUESTS, BOUND,
                (group, i) -> payAnswer(tokens.get(i), orderNo, requestNos.get(i)));

        List<Answer> paid = answers.stream().filter(a -> a.status() == 200).toList();
        List<Answer> refused = answers.stream().filter(a -> a.status() != 200).toList();
        assertAll(
                () -> assertEquals(1, paid.size(), "200 answers: " + answers),
                () -> assertTrue(paid.stream().allMatch(a -> "PAID".equals(JsonPath.from(a.body()).getString("status"))),
                        "paid answers: " + paid),
                () -> assertTrue(refused.stream().allMatch(a -> a.status() == 409
                        && "order_not_payable".equals(JsonPath.from(a.body()).getString("code"))),
                        "refused answers: " + refused),
                () -> assertEquals(1, db.payments(MERCHANT, orderNo), "payment records (refused ones roll back)"),
                () -> assertEquals(1, ledgerCharges(MERCHANT, orderNo), "charges at the channel"),
                () -> assertEquals(1, ledgerAttempts(MERCHANT, orderNo), "charge calls at the channel"),
                () -> assertEquals("PAID", orderStatus(MERCHANT, orderNo)),
                () -> assertEquals(2, orderVersion(MERCHANT, orderNo), "PENDING -> PAYING -> PAID, nothing else"));
    }

    @Test
    void declinedCharge_failsPaymentAndReturnsOrderToPending() {
        String orderNo = pendingOrder();
        String requestNo = id("req");
        sandbox("decline", 0, 1);

        Answer declined = payAnswer(token(), orderNo, requestNo);

        assertAll(
                () -> assertEquals(402, declined.status(), declined.body()),
                () -> assertEquals("payment_declined", JsonPath.from(declined.body()).getString("code")),
                () -> assertEquals("FAILED", paymentStatus(requestNo)),
                () -> assertEquals("PENDING", orderStatus(MERCHANT, orderNo)),
                () -> assertEquals(0, ledgerCharges(MERCHANT, orderNo), "successful charges at the channel"));
    }

    @Test
    void declinedOrder_paidWithNewTokenAndRequestNo() {
        String orderNo = pendingOrder();
        sandbox("decline", 0, 1);
        assertEquals(402, payAnswer(token(), orderNo, id("req")).status());

        Answer paid = payAnswer(token(), orderNo, id("req"));

        assertAll(
                () -> assertEquals(200, paid.status(), paid.body()),
                () -> assertEquals("PAID", JsonPath.from(paid.body()).getString("status")),
                () -> assertEquals("PAID", orderStatus(MERCHANT, orderNo)),
                () -> assertEquals(2, db.payments(MERCHANT, orderNo), "payment records: the declined and the paid"),
                () -> assertEquals(1, ledgerCharges(MERCHANT, orderNo), "successful charges at the channel"));
    }

    private static String paymentStatus(String requestNo) {
        return as(MERCHANT).get("/payments/" + requestNo).then().statusCode(200).extract().path("status");
    }
}
