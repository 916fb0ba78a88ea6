package io.payonce.idempotency;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.token;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Await;
import io.payonce.support.Fixtures;
import io.payonce.support.Operations;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;

/** A waiter holds a place in the instance's wake-up registry only while it waits. */
@QuarkusTest
class WaiterLifecycleTest {

    private static final Duration WAITERS_BOUND = Duration.ofSeconds(2);

    @Inject
    TestDatabase db;

    @ConfigProperty(name = "quarkus.http.test-port")
    int port;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
    }

    private static double waiters() {
        return Operations.metric("payonce_idempotency_waiters");
    }

    private static void awaitWaiters(double expected) {
        Await.until("waiters in the registry to be " + expected, WAITERS_BOUND, WaiterLifecycleTest::waiters,
                waiters -> waiters == expected);
    }

    @Test
    void waiterWhoseClientDisconnects_leavesTheRegistry_whileTheFirstStillRuns() throws Exception {
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        Fixtures.sandbox("ok", 900, 1);
        CompletableFuture<Integer> first = CompletableFuture
                .supplyAsync(() -> Fixtures.pay(token, orderNo, requestNo).statusCode());
        Await.until("the first request to claim its token", Duration.ofSeconds(5),
                () -> "IN_PROGRESS".equals(db.tokenState(MERCHANT, token)));
        String body = "{\"order_no\":\"" + orderNo + "\",\"request_no\":\"" + requestNo + "\",\"amount\":" + AMOUNT + "}";
        byte[] request = ("POST /pay HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "X-Merchant-Id: " + MERCHANT + "\r\nIdempotency-Key: " + token + "\r\nContent-Length: "
                + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8);

        try (Socket client = new Socket("127.0.0.1", port)) {
            OutputStream out = client.getOutputStream();
            out.write(request);
            out.flush();
            awaitWaiters(1);
        }

        awaitWaiters(0);
        assertEquals(200, first.get(10, TimeUnit.SECONDS));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, orderNo));
    }
}
