package io.payonce.recovery;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.MysqlProxy;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayRequest;
import io.payonce.support.TcpProxy;

/**
 * Ownership is fenced (contract section 6): an owner that outlived its lease, or whose opening COMMIT
 * is in doubt, never changes what it no longer owns and never answers "nothing happened" while its
 * payment may still be charged. Each test really pauses a process (SIGSTOP), or holds a COMMIT or its
 * answer at a MySQL-protocol proxy, and then counts charges at the channel and compares answers.
 *
 * <p>The settings are ones the service accepts at start: channel timeout 1 s, database timeout 2 s (the
 * default), a 4 s lease, reconciliation of payments 2 s old every second.
 */
class OwnershipFencingIT {

    private static final String MERCHANT = "merchant_fencing";
    private static final Duration LONG_CALL = Duration.ofSeconds(60);
    /** The reconciler's charge stays PENDING at the channel this long. */
    private static final long PENDING_MS = 12_000;
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(60);

    private AppProcess sandbox;
    private AppProcess owner;
    private AppProcess reconciler;
    private MysqlProxy ownersDatabase;
    private TcpProxy ownersChannel;

    @AfterEach
    void stop() throws Exception {
        if (owner != null && owner.isAlive()) {
            owner.resume();
        }
        AppProcess.closeAll(owner, reconciler, sandbox);
        if (ownersDatabase != null) {
            ownersDatabase.close();
        }
        if (ownersChannel != null) {
            ownersChannel.close();
        }
    }

    /** Short timings every instance here shares; an instance that reconciles is told so. */
    private static AppProcess instance(String name, String channelUrl, boolean reconciles) throws Exception {
        // each serves a sandbox too, for the tests to read the shared ledger through, but charges at the given one
        return AppProcess.named(name).channel(channelUrl)
                .env("PAYONCE_CHANNEL_TIMEOUT", "1s")
                .env("PAYONCE_IDEMPOTENCY_LEASE", "4s")
                .env("PAYONCE_RECONCILE_MIN_AGE", "2s")
                .env("PAYONCE_RECONCILE_INTERVAL", reconciles ? "1s" : "1h");
    }

    private void startSandbox() throws Exception {
        // the channel of every test: it reconciles nothing itself
        sandbox = AppProcess.named("fencing-sandbox").env("PAYONCE_RECONCILE_INTERVAL", "1h");
        sandbox.start().awaitReady();
    }

    /**
     * One instance that pays and reconciles, its database behind {@link #ownersDatabase}, charging at the
     * sandbox, which charges at once; answers a client of it.
     */
    private PayClient ownerBehindTheProxy(String name) throws Exception {
        startSandbox();
        ownersDatabase = new MysqlProxy(3306);
        owner = instance(name, sandbox.sandboxUrl(), true)
                .env("QUARKUS_DATASOURCE_REACTIVE_URL", databaseThrough(ownersDatabase));
        owner.start().awaitReady();
        new PayClient(sandbox, MERCHANT).sandbox("ok", 0, 0);
        return new PayClient(owner, MERCHANT);
    }

    private static String databaseThrough(MysqlProxy proxy) {
        return "mysql://127.0.0.1:" + proxy.port() + "/test";
    }

    /**
     * The first scenario under accepted settings. The owner A opens the payment (its COMMIT
     * commits, its answer is held) and is frozen there, past its lease; B's reconciler takes the payment
     * over, finds no charge at the channel and sends the same one, which the channel keeps PENDING. Then A
     * wakes with its channel unreachable. Before the fence A charged, was refused, undid the payment and
     * answered 503; the pending charge then landed on an order payable again, and a new attempt charged it a
     * second time.
     */
    @Test
    void ownerPausedPastItsLease_whileAnotherInstanceCompletesThePayment_chargesOnce() throws Exception {
        startSandbox();
        ownersDatabase = new MysqlProxy(3306);
        ownersChannel = new TcpProxy(sandbox.port());
        owner = instance("fencing-owner", "http://127.0.0.1:" + ownersChannel.port() + "/sandbox", false)
                .env("QUARKUS_DATASOURCE_REACTIVE_URL", databaseThrough(ownersDatabase));
        reconciler = instance("fencing-reconciler", sandbox.sandboxUrl(), true);
        AppProcess.startAll(owner, reconciler);
        PayClient atOwner = new PayClient(owner, MERCHANT);
        PayClient atReconciler = new PayClient(reconciler, MERCHANT);
        PayClient channel = new PayClient(sandbox, MERCHANT);
        PayRequest request = atOwner.newRequest();
        // given: the next charge the channel receives stays PENDING for a while
        channel.sandbox("ok", PENDING_MS, 1);
        MysqlProxy.Hold answerHeld = ownersDatabase.holdNextCommitAnswer(Duration.ofSeconds(6));

        // when: A's opening commits, and A freezes before it hears so
        CompletableFuture<Answer> first = CompletableFuture.supplyAsync(
                () -> Answer.of(() -> request.on(atOwner.call(LONG_CALL)).post("/pay")));
        answerHeld.awaitCaught(Duration.ofSeconds(10));
        owner.pause();
        // B takes the payment over and sends the charge again: the channel now holds it PENDING
        Await.until("the reconciler's charge at the channel", Duration.ofSeconds(30),
                () -> channel.ledger(request.orderNo()).attempts(), attempts -> attempts >= 1);
        // nothing listens any more where A reaches the channel: its charge would be refused before acceptance
        ownersChannel.close();
        owner.resume();
        Answer firstAnswer = first.get(LONG_CALL.toSeconds(), TimeUnit.SECONDS);
        Books settled = Await.until("the payment settled", SETTLE_BOUND, () -> atReconciler.books(request.orderNo()),
                Books::settled);
        Answer replay = atReconciler.pay(request);
        Answer replayAtOwner = atOwner.pay(request);
        Answer anotherAttempt = atReconciler.pay(atReconciler.newAttempt(request));

        // then
        Books books = atReconciler.books(request.orderNo());
        assertAll(
                () -> assertNotEquals(503, firstAnswer.status(), "A said nothing was charged: " + firstAnswer),
                () -> assertTrue(firstAnswer.status() == 202 || firstAnswer.status() == 200, "A: " + firstAnswer),
                () -> assertEquals("PAID", settled.orderStatus()),
                () -> assertEquals(200, replay.status(), "replay: " + replay),
                () -> assertEquals(replay.body(), replayAtOwner.body(), "every final answer agrees"),
                () -> assertEquals(409, anotherAttempt.status(), "the paid order: " + anotherAttempt),
                () -> assertEquals(1, books.charges(), "charges at the channel: " + books),
                () -> assertEquals(1, books.paymentsFor(request.requestNo())));
    }

    /**
     * The second scenario: the opening COMMIT reaches MariaDB 3.5 s late, past the 2 s database
     * timeout. Before the resolution the owner looked at once on a fresh connection, found nothing,
     * answered 503 ("nothing was charged"), and the COMMIT then landed and reconciliation charged it.
     */
    @Test
    void openingCommitReachingTheServerLate_isNeverAnswered503AndThenCharged() throws Exception {
        PayClient client = ownerBehindTheProxy("fencing-late-commit");
        PayRequest request = client.newRequest();
        ownersDatabase.holdNextCommit(Duration.ofMillis(3_500));

        // when
        Answer first = client.pay(request);
        // past the held COMMIT, the lease and the min-age, with reconciliation every second
        Thread.sleep(8_000);
        Books afterwards = client.books(request.orderNo());

        // then: a 503 means nothing was, or can be, charged under the request; a 202 is settled later
        if (first.status() == 503) {
            assertAll(
                    () -> assertEquals(0, afterwards.payments().size(), "no payment record after a 503: " + afterwards),
                    () -> assertEquals(0, afterwards.attempts(), "nothing sent to the channel: " + afterwards),
                    () -> assertEquals("PENDING", afterwards.orderStatus()));
        } else {
            assertEquals(202, first.status(), "the opening in doubt: " + first);
        }
        Answer retried = client.payUntilFinal(request, SETTLE_BOUND);
        Books books = client.books(request.orderNo());
        assertAll(
                () -> assertEquals(200, retried.status(), "the retry: " + retried),
                () -> assertEquals(1, books.charges(), "charges: " + books),
                () -> assertEquals("PAID", books.orderStatus()));
    }

    /**
     * The opening COMMIT commits, and its answer comes 3.5 s late: the owner resolves the doubt (its record
     * is there, under its epoch) and charges, once.
     */
    @Test
    void openingCommitAnsweredLate_isResolvedAsCommitted_andPaidOnce() throws Exception {
        PayClient client = ownerBehindTheProxy("fencing-late-answer");
        PayRequest request = client.newRequest();
        ownersDatabase.holdNextCommitAnswer(Duration.ofMillis(3_500));

        // when
        Answer first = client.pay(request);
        Answer replay = client.payUntilFinal(request, SETTLE_BOUND);

        // then
        Books books = client.books(request.orderNo());
        assertAll(
                () -> assertTrue(first.status() == 200 || first.status() == 202, "the owner: " + first),
                () -> assertEquals(200, replay.status(), "the request's final answer: " + replay),
                () -> assertEquals(1, books.charges(), "charges: " + books),
                () -> assertEquals(1, books.attempts(), "charge calls: " + books));
    }
}
