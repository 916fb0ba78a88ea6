package io.payonce.payment;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.ledgerCharges;
import static io.payonce.support.Fixtures.orderStatus;
import static io.payonce.support.Fixtures.payAnswer;
import static io.payonce.support.Fixtures.payRequest;
import static io.payonce.support.Fixtures.sandbox;
import static io.payonce.support.Fixtures.sandboxNormal;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import jakarta.inject.Inject;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Answer;
import io.payonce.support.Await;
import io.payonce.support.Operations;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;

/**
 * A duplicate that was waiting when the first owner released the token (its charge refused before
 * acceptance) executes the request itself. From then on it is the owner, and the contract holds it to
 * what holds the first owner: it runs detached from its HTTP request, so a client that hangs up in the
 * middle of its charge cannot leave the order PAYING with the charge taken.
 */
@QuarkusTest
class TakeOverTest {

    /** The first owner's charge, refused after this long: the window in which the duplicate starts waiting. */
    private static final long REFUSED_AFTER_MS = 1000;
    /** The take-over's charge: slow enough to hang up in the middle of it, under the test profile's 3 s timeout. */
    private static final long TAKE_OVER_CHARGE_MS = 2000;
    /** How far into the take-over's charge its client hangs up. */
    private static final long HANG_UP_AFTER_MS = 500;
    /** The charge's remaining latency and the settlement, with room; nothing else settles here (no reconciliation). */
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(8);
    private static final Duration STEP_BOUND = Duration.ofSeconds(5);

    @Inject
    TestDatabase db;

    @ConfigProperty(name = "quarkus.http.test-port")
    int port;

    private ExecutorService background;
    private Socket duplicate;

    @BeforeEach
    void setUp() {
        db.clean();
        sandboxNormal();
        background = Executors.newSingleThreadExecutor();
    }

    @AfterEach
    void tearDown() throws Exception {
        if (duplicate != null) {
            duplicate.close();
        }
        background.shutdownNow();
        background.awaitTermination(5, TimeUnit.SECONDS);
        sandboxNormal();
    }

    @Test
    void takeOverOfAReleasedToken_completesAfterItsClientHangsUp() throws Exception {
        // given: a first owner whose charge the channel will refuse before accepting it, and a duplicate
        // of the same request waiting for that owner
        PayRequest request = payRequest();
        sandbox("fail_before_accept", REFUSED_AFTER_MS, 1);
        CompletableFuture<Answer> owner = CompletableFuture.supplyAsync(() -> payAnswer(request), background);
        Await.until("the owner to claim the token", STEP_BOUND,
                () -> "IN_PROGRESS".equals(db.tokenState(MERCHANT, request.token())));
        Await.until("the owner's charge to reach the channel", STEP_BOUND, TakeOverTest::sandboxStepTaken);
        // the owner's charge has taken its step already; the next charge, the take-over's, is slow and succeeds
        sandbox("ok", TAKE_OVER_CHARGE_MS, 1);
        duplicate = sendAndKeepOpen(request);
        Await.until("the duplicate to wait", STEP_BOUND, () -> Operations.metric("payonce_idempotency_waiters") >= 1);
        assertFalse(owner.isDone(), "the owner's charge was refused before the duplicate waited for it");

        // when: the owner is refused and releases the token, the duplicate takes it over and charges, and
        // its client hangs up in the middle of that charge
        Answer released = owner.get(STEP_BOUND.toMillis(), TimeUnit.MILLISECONDS);
        assertEquals(503, released.status(), () -> "the owner released the token: " + released.body());
        // the ok step is taken only by a charge that arrives: the take-over's
        Await.until("the take-over's charge to reach the channel", STEP_BOUND, TakeOverTest::sandboxStepTaken);
        // the hang-up lands in the middle of the charge: the timing is what the test is about
        Thread.sleep(HANG_UP_AFTER_MS);
        assertEquals("PAYING", orderStatus(MERCHANT, request.orderNo()),
                "the take-over's charge was still running when its client hung up");
        hangUp(duplicate);

        // then: the take-over finishes what it started, as the first owner would have
        Await.upTo(SETTLE_BOUND, () -> "PAID".equals(orderStatus(MERCHANT, request.orderNo())));
        Answer replay = payAnswer(request);
        assertAll(
                () -> assertEquals("PAID", orderStatus(MERCHANT, request.orderNo()),
                        "order settled within " + SETTLE_BOUND + " of the hang-up"),
                () -> assertEquals("SUCCEEDED", paymentStatus(request.requestNo())),
                () -> assertEquals("COMPLETED", db.tokenState(MERCHANT, request.token())),
                () -> assertEquals(1, db.payments(MERCHANT, request.orderNo()), "payment records"),
                () -> assertEquals(1, ledgerCharges(MERCHANT, request.orderNo()), "charges at the channel"),
                () -> assertEquals(200, replay.status(), replay.body()),
                () -> assertEquals("true", replay.replayed(), "the take-over's answer is stored and replayed"),
                () -> assertEquals("PAID", JsonPath.from(replay.body()).getString("status")));
    }

    /** True once the charge that took the sandbox's last behaviour step has arrived (count back to 0). */
    private static boolean sandboxStepTaken() {
        return as(MERCHANT).get("/sandbox/behavior").then().statusCode(200).extract().<Integer>path("count") == 0;
    }

    private static String paymentStatus(String requestNo) {
        return as(MERCHANT).get("/payments/" + requestNo).then().statusCode(200).extract().path("status");
    }

    /**
     * The pay request written on a raw connection whose answer is never read, so the test decides when the
     * client goes away; RestAssured offers no way to hang up in the middle of a call.
     */
    private Socket sendAndKeepOpen(PayRequest request) throws IOException {
        byte[] body = ("{\"order_no\":\"" + request.orderNo() + "\",\"request_no\":\"" + request.requestNo()
                + "\",\"amount\":" + AMOUNT + "}").getBytes(StandardCharsets.UTF_8);
        String head = "POST /pay HTTP/1.1\r\n"
                + "Host: 127.0.0.1:" + port + "\r\n"
                + "X-Merchant-Id: " + MERCHANT + "\r\n"
                + "Idempotency-Key: \"" + request.token() + "\"\r\n"
                + "Content-Type: application/json\r\n"
                + "Content-Length: " + body.length + "\r\n"
                + "\r\n";
        Socket socket = new Socket();
        socket.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
        OutputStream out = socket.getOutputStream();
        out.write(head.getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
        return socket;
    }

    /** A reset rather than a polite close: the client is gone at once, as when a mobile app is killed. */
    private static void hangUp(Socket socket) throws IOException {
        socket.setSoLinger(true, 0);
        socket.close();
    }
}
