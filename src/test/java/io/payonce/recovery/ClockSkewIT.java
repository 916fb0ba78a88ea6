package io.payonce.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.time.Duration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayRequest;

/**
 * Two instances whose clocks differ by ten minutes: W1 pays (its clock is right), W2 reconciles (its clock
 * runs ahead, set by libfaketime). Ages and leases are compared on the database's clock, so W2 leaves a
 * payment alone until it is old enough and its owner's lease has ended there, whatever its own clock says.
 * Judged by its own clock, W2 would find the payment ten minutes old at once and settle it on a query made
 * while the channel still holds the charge.
 */
class ClockSkewIT {

    private static final String MERCHANT = "merchant_skew";
    private static final File FAKETIME = new File("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");
    /** Longer than W1's channel timeout (so W1 answers 202) and than W2's min-age and W1's lease. */
    private static final long SLOW_CHARGE_MS = 5_000;

    private AppProcess sandbox;
    private AppProcess owner;
    private AppProcess reconciler;

    @AfterEach
    void stop() throws InterruptedException {
        AppProcess.closeAll(reconciler, owner, sandbox);
    }

    @Test
    void reconcilerWhoseClockRunsAhead_waitsForTheAgeAndLeaseOnTheDatabasesClock() throws Exception {
        assertTrue(FAKETIME.isFile(), "libfaketime is installed (scripts/services.sh --test-tools): " + FAKETIME);
        sandbox = AppProcess.named("skew-sandbox");
        owner = AppProcess.named("skew-owner").channel(sandbox.sandboxUrl())
                .env("PAYONCE_SANDBOX_ENABLED", "false")
                .env("PAYONCE_CHANNEL_TIMEOUT", "1s")
                .env("PAYONCE_IDEMPOTENCY_LEASE", "4s")
                .env("PAYONCE_RECONCILE_INTERVAL", "1h");
        reconciler = AppProcess.named("skew-reconciler").channel(sandbox.sandboxUrl())
                .env("PAYONCE_SANDBOX_ENABLED", "false")
                .env("PAYONCE_CHANNEL_TIMEOUT", "1s")
                .env("PAYONCE_RECONCILE_INTERVAL", "1s")
                .env("PAYONCE_RECONCILE_MIN_AGE", "2s")
                .env("PAYONCE_IDEMPOTENCY_LEASE", "4s")
                .env("LD_PRELOAD", FAKETIME.getPath())
                .env("FAKETIME", "+10m")
                // the JVM's timers and Vert.x's run on the monotonic clock, which stays true
                .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        // the skewed JVM starts slowly (libfaketime sits under every clock read): alone, it starts sooner
        AppProcess.startAll(sandbox, owner);
        reconciler.start().awaitReady();
        PayClient channel = new PayClient(sandbox, MERCHANT);
        PayClient client = new PayClient(owner, MERCHANT);
        PayRequest request = client.newRequest();
        channel.sandbox("ok", SLOW_CHARGE_MS, 1);

        Answer first = client.pay(request);
        long sentAt = System.nanoTime();
        assertEquals(202, first.status(), () -> "W1 gave up waiting for the slow charge: " + first);

        // while the channel holds the charge, W2 runs every second and must never settle it: watched, not awaited
        while (System.nanoTime() - sentAt < Duration.ofMillis(SLOW_CHARGE_MS - 1_500).toNanos()) {
            Books books = channel.books(request.orderNo());
            assertEquals("PROCESSING", books.paymentStatus(request.requestNo()), () -> "settled early: " + books);
            Thread.sleep(250);
        }
        Books settled = awaitSettled(channel, request, Duration.ofSeconds(25));

        assertEquals("PAID", settled.orderStatus(), settled::toString);
        assertEquals(1, settled.charges(), settled::toString);
        assertEquals("SUCCEEDED", settled.paymentStatus(request.requestNo()), settled::toString);
        Answer retry = client.pay(request);
        assertEquals(200, retry.status(), retry::toString);
        assertEquals("true", retry.replayed(), "a replay of the settled answer");
    }

    /** The books once the order is settled, or as they are at {@code bound}. */
    private static Books awaitSettled(PayClient channel, PayRequest request, Duration bound) {
        return Await.upTo(bound, () -> channel.books(request.orderNo()), Books::settled);
    }
}
