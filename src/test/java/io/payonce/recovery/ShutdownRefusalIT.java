package io.payonce.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayRequest;
import io.payonce.support.WorkerAndSandbox;

/**
 * An instance stopping under steady traffic drains. Past its shutdown delay (1 s, readiness down, requests still
 * served), a request that arrives is refused before anything is done for it, 503 {@code temporarily_unavailable}
 * with {@code Retry-After}, while the payment in flight finishes with its answer; so the instance exits once its
 * own work is done, instead of taking on new payments until its shutdown timeout cuts them off mid-way (Quarkus
 * itself serves whatever arrives until the process exits).
 */
class ShutdownRefusalIT {

    private static final String MERCHANT = "merchant_refusal";
    /** The charge in flight when SIGTERM comes: longer than the delay plus the wait below. */
    private static final long SLOW_CHARGE_MS = 5_000;
    private static final Duration SHUTDOWN_DELAY = Duration.ofSeconds(1);
    /** After SIGTERM, well past the delay, and well before the charge in flight ends. */
    private static final Duration PAST_THE_DELAY = SHUTDOWN_DELAY.plusMillis(1_500);
    private static final Duration EXIT_BOUND = Duration.ofSeconds(20);

    private static WorkerAndSandbox instances;
    private static ExecutorService senders;

    @BeforeAll
    static void start() throws Exception {
        // the channel timeout above the slow charge, so the owner in flight gets the channel's answer
        instances = WorkerAndSandbox.named("refusal").worker("PAYONCE_CHANNEL_TIMEOUT", "8s");
        instances.start(MERCHANT);
        instances.warmUp();
        senders = Executors.newSingleThreadExecutor();
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (senders != null) {
            senders.shutdownNow();
        }
        if (instances != null) {
            instances.close();
        }
    }

    @Test
    void pastTheShutdownDelay_aNewRequestIsRefusedRetryably_theOneInFlightFinishes() throws Exception {
        AppProcess worker = instances.worker();
        PayClient client = instances.client();
        PayClient channel = instances.channel();
        PayRequest inFlight = client.newRequest();
        PayRequest late = client.newRequest();
        channel.sandbox("ok", SLOW_CHARGE_MS, 1);
        CompletableFuture<Answer> owner = CompletableFuture.supplyAsync(() -> client.pay(inFlight), senders);
        Await.until("the slow charge to reach the channel", Duration.ofSeconds(5),
                () -> channel.ledger(inFlight.orderNo()).attempts() == 1);

        worker.terminate();
        Thread.sleep(PAST_THE_DELAY.toMillis());
        Answer refused = client.pay(late);
        Answer ownersAnswer = owner.get(EXIT_BOUND.toSeconds(), TimeUnit.SECONDS);
        boolean exited = worker.awaitExit(EXIT_BOUND);

        assertEquals(503, refused.status(), () -> "refused, not served: " + refused);
        assertEquals("temporarily_unavailable", refused.code(), refused::toString);
        assertNotNull(refused.retryAfter(), () -> "the client is told to send it again: " + refused);
        Books lateBooks = channel.books(late.orderNo());
        assertEquals("PENDING", lateBooks.orderStatus(), () -> "nothing was done for it: " + lateBooks);
        assertTrue(lateBooks.payments().isEmpty(), lateBooks::toString);
        assertEquals(0, lateBooks.attempts(), lateBooks::toString);
        assertEquals(200, ownersAnswer.status(), () -> "the payment in flight finished: " + ownersAnswer);
        assertEquals("PAID", ownersAnswer.field("status"));
        assertTrue(exited, "the worker exited on its own");
    }
}
