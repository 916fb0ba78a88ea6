package io.payonce.payment;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.token;
import static io.payonce.support.Fixtures.sandbox;
import static io.payonce.support.Fixtures.pay;
import static io.payonce.support.Fixtures.ledgerAttempts;
import static io.payonce.support.Fixtures.ledgerCharges;
import static io.payonce.support.Fixtures.orderStatus;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.sandboxNormal;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.idempotency.StoredResponse;
import io.payonce.idempotency.TokenClaim;
import io.payonce.support.Concurrently;
import io.payonce.support.Await;
import io.restassured.response.Response;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;

/**
 * Layer 2 alone: callers without a token (a job, a queue consumer) go straight to the executor, and only
 * the unique index on the request number stands between them and a second payment.
 */
@QuarkusTest
class UniqueIndexLayerTest {

    private static final int COPIES = 20;
    private static final Duration BOUND = Duration.ofSeconds(20);

    @Inject
    TestDatabase db;

    private static final String PAID = "PAID";

    @Inject
    PaymentExecutor executor;

    @BeforeEach
    void setUp() {
        db.clean();
        sandboxNormal();
    }

    @Test
    void requestNoReusedOnAnotherOrder_isRefusedAndLeavesThatOrderPending() {
        String paidOrder = pendingOrder();
        String otherOrder = pendingOrder();
        String requestNo = id("req");
        String paid = execute(paidOrder, requestNo);
        assertEquals(PAID, paid);

        String reused = execute(otherOrder, requestNo);

        assertAll(
                () -> assertEquals("request_no_conflict", reused),
                () -> assertEquals("PENDING", orderStatus(MERCHANT, otherOrder)),
                () -> assertEquals(1, paymentsWithRequestNo(requestNo), "payment records for the request number"),
                () -> assertEquals(0, db.payments(MERCHANT, otherOrder), "payment records of the other order"),
                () -> assertEquals(0, ledgerCharges(MERCHANT, otherOrder), "charges of the other order"),
                () -> assertEquals(0, ledgerAttempts(MERCHANT, otherOrder), "charge calls for the other order"),
                () -> assertEquals(1, ledgerCharges(MERCHANT, paidOrder), "charges of the paid order"));
    }

    @Test
    void concurrentExecutionsOfOneRequestNo_payOnce() {
        String orderNo = pendingOrder();
        String requestNo = id("req");

        List<String> outcomes = Concurrently.all(COPIES, BOUND, (group, copy) -> execute(orderNo, requestNo));

        long paid = outcomes.stream().filter(PAID::equals).count();
        assertAll(
                () -> assertEquals(1, paid, "Paid outcomes: " + outcomes),
                () -> assertTrue(outcomes.stream().allMatch(o -> PAID.equals(o)
                        || "request_no_conflict".equals(o) || "order_not_payable".equals(o)),
                        "outcomes: " + outcomes),
                () -> assertEquals(1, paymentsWithRequestNo(requestNo), "payment records"),
                () -> assertEquals(1, ledgerCharges(MERCHANT, orderNo), "charges at the channel"),
                () -> assertEquals(1, ledgerAttempts(MERCHANT, orderNo), "charge calls at the channel"),
                () -> assertEquals("PAID", orderStatus(MERCHANT, orderNo)));
    }

    @Test
    void conflictWithAHolderStillInFlight_isNotStored_soARetryPaysOnceTheHolderIsUndone() {
        String requestNo = id("req");
        String holderOrder = pendingOrder();
        String otherOrder = pendingOrder();
        String holderToken = token();
        String otherToken = token();
        // the holder's charge is refused before acceptance, after a while: its record is undone then
        sandbox("fail_before_accept", 2_000, 1);
        CompletableFuture<Response> holder = CompletableFuture.supplyAsync(() -> pay(holderToken, holderOrder, requestNo));
        Await.until("the holder's payment record", BOUND, () -> paymentsWithRequestNo(requestNo) == 1);

        Response conflict = pay(otherToken, otherOrder, requestNo);
        Response holderAnswer = holder.join();
        Response retried = pay(otherToken, otherOrder, requestNo);

        assertAll(
                () -> assertEquals(409, conflict.statusCode(), conflict.asString()),
                () -> assertEquals("request_no_conflict", conflict.jsonPath().getString("code")),
                () -> assertEquals("1", conflict.header("Retry-After"), "retryable while the holder is in flight"),
                () -> assertTrue(conflict.jsonPath().getString("detail").contains("retryable"), conflict.asString()),
                () -> assertEquals(503, holderAnswer.statusCode(), "the holder undone: " + holderAnswer.asString()),
                () -> assertEquals(200, retried.statusCode(), "the number is free now: " + retried.asString()),
                () -> assertEquals(1, ledgerCharges(MERCHANT, otherOrder)));
    }

    /**
     * An execution under a token of its own, so that only layer 2 (and 3) can stop it: PAID, or the answer's
     * problem code.
     */
    private String execute(String orderNo, String requestNo) {
        PayCommand cmd = new PayCommand(MERCHANT, id("tok"), orderNo, requestNo, AMOUNT, null, null);
        TokenClaim claim = new TokenClaim(cmd.token(), cmd.fingerprint(), requestNo, Instant.now().plusSeconds(3600), true);
        StoredResponse answer = executor.execute(cmd, claim).await().atMost(BOUND).response();
        return answer.status() == 200 ? PAID : JsonPath.from(answer.body()).getString("code");
    }

    private long paymentsWithRequestNo(String requestNo) {
        return db.count("SELECT COUNT(*) FROM payments WHERE merchant_id = ? AND request_no = ?", MERCHANT, requestNo);
    }
}
