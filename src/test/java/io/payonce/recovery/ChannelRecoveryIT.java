package io.payonce.recovery;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.ClassOrderer;
import org.junit.jupiter.api.MethodOrderer.OrderAnnotation;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestClassOrder;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.EachRequest;
import io.payonce.support.Operations;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayClient.ChannelCharge;
import io.payonce.support.PayClient.PaymentRecord;
import io.payonce.support.PayRequest;

/**
 * Only the channel's word settles a charge that was sent (contract sections 5 and 6): a charge the channel
 * still holds PENDING is left alone however old its payment, a charge takes effect at the channel even when
 * the process that sent it dies, a payment the channel never completes is closed there before it is
 * reported failed, and reconcilers on several instances racing the owners settle each payment once.
 *
 * <p>The channel is the sandbox of an instance S that nothing disturbs. The workers give up on the channel
 * after 1 s and reconcile every second any payment 2 s old whose owner's 4 s lease has ended, so a
 * charge the sandbox holds for a few seconds is looked at by reconciliation while it is still PENDING.
 * Each group of tests starts the workers it is about and stops them after: every worker reconciles every
 * payment on the database, so one that gives up after 4 s must not run beside a slower charge of another
 * test.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestClassOrder(ClassOrderer.OrderAnnotation.class)
class ChannelRecoveryIT {

    private static final Duration CHANNEL_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration MIN_AGE = Duration.ofSeconds(2);
    private static final Duration LEASE = Duration.ofSeconds(4);
    /** Past the sandbox's latency and a reconciliation backoff or two: a settled payment is settled by then. */
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(25);

    private AppProcess sandbox;
    private ExecutorService senders;

    @BeforeAll
    void startTheSandbox() throws Exception {
        sandbox = AppProcess.named("channel-sandbox");
        sandbox.start().awaitReady();
        senders = Executors.newFixedThreadPool(32);
    }

    @AfterAll
    void stopTheSandbox() throws InterruptedException {
        if (senders != null) {
            senders.shutdownNow();
        }
        // killed, not stopped: the give-up test leaves S holding a 60 s charge call open, which a polite
        // stop waits out for its whole shutdown timeout, and S keeps nothing that needs a clean stop
        if (sandbox != null && sandbox.isAlive()) {
            sandbox.kill();
        }
    }

    /** A worker charging through S's sandbox, serving none of its own, with the short timings above. */
    private AppProcess worker(String name) throws Exception {
        return AppProcess.named(name)
                .channel(sandbox.sandboxUrl())
                .env("PAYONCE_SANDBOX_ENABLED", "false")
                .env("PAYONCE_CHANNEL_TIMEOUT", seconds(CHANNEL_TIMEOUT))
                .env("PAYONCE_RECONCILE_MIN_AGE", seconds(MIN_AGE))
                .env("PAYONCE_IDEMPOTENCY_LEASE", seconds(LEASE))
                .env("PAYONCE_RECONCILE_INTERVAL", "1s");
    }

    /** S's sandbox for {@code merchant}, back to charging at once: the channel's side of every test. */
    private PayClient channelFor(String merchant) {
        PayClient channel = new PayClient(sandbox, merchant);
        channel.sandbox("ok", 0, 0);
        return channel;
    }

    /** W1 and W2 on one database, both paying and reconciling through S's sandbox. */
    @Nested
    @Order(1)
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    @TestMethodOrder(OrderAnnotation.class)
    class TwoReconcilingWorkers {

        private static final String SLOW_MERCHANT = "merchant_slow_accept";
        private static final String RACE_MERCHANT = "merchant_reconcile_race";
        /** Three reconciliation runs past the min-age and lease fit inside it. */
        private static final long SLOW_ACCEPT_MS = 6_000;
        /** The owner's channel call times out first, and the first reconciliation runs may find it PENDING. */
        private static final long SLOW_CHARGE_MS = 2_500;
        private static final int PER_BEHAVIOUR = 4;

        private AppProcess w1;
        private AppProcess w2;

        @BeforeAll
        void startTwoWorkers() throws Exception {
            w1 = worker("channel-w1");
            w2 = worker("channel-w2");
            AppProcess.startAll(w1, w2);
            // one payment through each, so what the tests time finds both past their first, slow requests
            PayClient channel = channelFor(SLOW_MERCHANT);
            for (AppProcess w : List.of(w1, w2)) {
                PayClient client = new PayClient(w, SLOW_MERCHANT);
                assertEquals(200, client.pay(channel.newRequest()).status(), "a warm-up payment");
            }
        }

        @AfterAll
        void stopTwoWorkers() throws InterruptedException {
            AppProcess.closeAll(w1, w2);
        }

        /**
         * The channel takes longer to accept a charge than the payment's reconciliation age. "Not there yet"
         * is not "never charged": a payment declined on it would be charged by the channel anyway, and a second
         * payment of the order would charge the customer twice.
         */
        @Test
        @Order(1)
        void slowAcceptance_pastReconciliationAge_isPaidNeverDeclined() throws Exception {
            // given: S charges the next payment after 6 s, far past W1's 1 s channel timeout and 2 s min-age
            PayClient channel = channelFor(SLOW_MERCHANT);
            PayClient client = new PayClient(w1, SLOW_MERCHANT);
            PayClient other = new PayClient(w2, SLOW_MERCHANT);
            PayRequest request = client.newRequest();
            channel.sandbox("ok", SLOW_ACCEPT_MS, 1);

            // when: it is paid, and while the channel holds the charge both reconcilers run several times
            long sent = System.nanoTime();
            Answer first = client.pay(request);
            assertEquals(202, first.status(), () -> "the channel call timed out: outcome unknown, " + first);
            assertEquals("PROCESSING", first.field("status"), first::toString);
            // a duplicate on the other instance waits for the settlement (or its wait bound)
            CompletableFuture<Answer> duplicate = CompletableFuture.supplyAsync(() -> other.pay(request), senders);
            List<String> whilePending = new ArrayList<>();
            // a sample every 250 ms for as long as the channel holds the charge: watched, not awaited
            while (elapsedMs(sent) < SLOW_ACCEPT_MS - 1_000) {
                whilePending.add("payment " + client.paymentStatus(request.requestNo()) + ", channel "
                        + channel.queryCharge(request.requestNo()).status());
                Thread.sleep(250);
            }
            assertTrue(whilePending.stream().allMatch(seen -> seen.equals("payment PROCESSING, channel PENDING")),
                    () -> "while the channel held the charge the payment stayed PROCESSING: " + whilePending);

            // then: once the charge takes effect, reconciliation pays the order, once
            assertTrue(Await.upTo(SETTLE_BOUND, () -> !"PROCESSING".equals(client.paymentStatus(request.requestNo()))),
                    "settled within " + SETTLE_BOUND);
            PaymentRecord payment = client.payment(request.requestNo());
            String txnId = channel.queryCharge(request.requestNo()).txnId();
            Books books = channel.books(request.orderNo());
            assertEquals("SUCCEEDED", payment.status(), () -> books.toString());
            assertNotNull(txnId, "the channel names its transaction");
            assertEquals(txnId, payment.channelTxnId(), "the payment names the channel's transaction");
            assertEquals("PAID", books.orderStatus(), books::toString);
            assertEquals(1, books.charges(), books::toString);

            Answer duplicateAnswer = duplicate.get(30, TimeUnit.SECONDS);
            Answer retry = client.pay(request);
            assertEquals(200, retry.status(), () -> "the stored 200: " + retry);
            assertTrue(retry.isReplay(), () -> "replayed: " + retry);
            assertEquals(txnId, retry.field("channel_txn_id"), "the answer names the channel's transaction");
            assertTrue(duplicateAnswer.status() == 200 || duplicateAnswer.status() == 202,
                    () -> "the waiting duplicate got the settlement or the 202 again, never a 402: " + duplicateAnswer);
            if (duplicateAnswer.status() == 200) {
                assertEquals(retry.body(), duplicateAnswer.body(), "the same answer byte for byte");
            }

            // and: the paid order cannot be paid again, so there is no second charge
            PayRequest again = client.newAttempt(request);
            Answer second = client.pay(again);
            assertEquals(409, second.status(), () -> "order_not_payable: " + second);
            assertEquals("order_not_payable", second.code(), second::toString);
            Books after = channel.books(request.orderNo());
            assertEquals(1, after.charges(), () -> "still one charge: " + after);
        }

        /**
         * Twelve payments through W1 and W2, each request's two copies sent to both at once so either may own
         * it, while both instances reconcile: slow successes (the owner's call times out while the charge is
         * PENDING), successes whose answer is lost (recorded at once, answered after the owner gave up) and
         * slow declines. Every order must end as the channel said, once, and every copy agree.
         */
        @Test
        @Order(2)
        void reconcilersOnTwoInstances_racingTheOwners_settleEachPaymentOnTheChannelsWord() throws Exception {
            // given
            PayClient channel = channelFor(RACE_MERCHANT);
            List<PayClient> clients = List.of(new PayClient(w1, RACE_MERCHANT), new PayClient(w2, RACE_MERCHANT));
            Map<String, List<PayRequest>> byBehaviour = new LinkedHashMap<>();
            byBehaviour.put("ok", channel.newRequests(PER_BEHAVIOUR));
            byBehaviour.put("timeout_after_accept", channel.newRequests(PER_BEHAVIOUR));
            byBehaviour.put("decline", channel.newRequests(PER_BEHAVIOUR));
            Map<String, Long> latency = Map.of("ok", SLOW_CHARGE_MS, "timeout_after_accept", 0L, "decline", SLOW_CHARGE_MS);
            List<PayRequest> all = new ArrayList<>();
            byBehaviour.values().forEach(all::addAll);

            // when: each behaviour's payments are sent, and reach the channel before the next behaviour is set
            Map<PayRequest, List<CompletableFuture<Answer>>> copies = new LinkedHashMap<>();
            int n = 0;
            for (var group : byBehaviour.entrySet()) {
                channel.sandbox(group.getKey(), latency.get(group.getKey()), PER_BEHAVIOUR);
                for (PayRequest request : group.getValue()) {
                    // both copies at once, W1's and W2's sent first in turn, so owners are on both instances
                    PayClient firstTo = clients.get(n % 2);
                    PayClient thenTo = clients.get((n + 1) % 2);
                    n++;
                    List<CompletableFuture<Answer>> sent = new ArrayList<>();
                    sent.add(firstTo.payUntilFinalAsync(request, Duration.ofSeconds(30), senders));
                    sent.add(thenTo.payUntilFinalAsync(request, Duration.ofSeconds(30), senders));
                    copies.put(request, sent);
                }
                List<PayRequest> sentNow = group.getValue();
                assertTrue(Await.upTo(Duration.ofSeconds(4), () -> sentNow.stream()
                        .allMatch(request -> channel.queryCharge(request.requestNo()).httpStatus() == 200)),
                        () -> group.getKey() + " charges recorded at the channel the moment they arrived");
            }
            Map<PayRequest, List<Answer>> answers = new LinkedHashMap<>();
            for (var sent : copies.entrySet()) {
                List<Answer> got = new ArrayList<>();
                for (CompletableFuture<Answer> copy : sent.getValue()) {
                    got.add(copy.get(60, TimeUnit.SECONDS));
                }
                answers.put(sent.getKey(), got);
            }
            // bounded; the checks below judge whatever is left unsettled
            Await.upTo(SETTLE_BOUND, () -> all.stream().allMatch(request -> channel.books(request.orderNo()).settled()));

            // then
            Map<PayRequest, Books> books = new LinkedHashMap<>();
            Map<PayRequest, ChannelCharge> charges = new LinkedHashMap<>();
            Map<PayRequest, List<CompletableFuture<Answer>>> replaying = new LinkedHashMap<>();
            for (PayRequest request : all) {
                books.put(request, channel.books(request.orderNo()));
                charges.put(request, channel.queryCharge(request.requestNo()));
                // side by side: a payment still unsettled holds each replay for a duplicate's wait bound
                replaying.put(request, clients.stream()
                        .map(c -> CompletableFuture.supplyAsync(() -> c.pay(request), senders)).toList());
            }
            Map<PayRequest, List<Answer>> replays = new LinkedHashMap<>();
            for (PayRequest request : all) {
                List<Answer> got = new ArrayList<>();
                for (CompletableFuture<Answer> replay : replaying.get(request)) {
                    got.add(replay.get(30, TimeUnit.SECONDS));
                }
                replays.put(request, got);
            }
            Function<PayRequest, String> story = request -> request.orderNo() + " (" + books.get(request) + "; copies "
                    + answers.get(request) + "; replays " + replays.get(request) + "; channel " + charges.get(request) + ")";
            assertAll(
                    () -> EachRequest.assertForEach(all, story, request -> {
                        Books b = books.get(request);
                        assertTrue(b.settled(), () -> "settled: " + b);
                        assertEquals(1, b.payments().size(), b::toString);
                        boolean paidOnce = "PAID".equals(b.orderStatus()) && b.charges() == 1
                                && "SUCCEEDED".equals(b.paymentStatus(request.requestNo()));
                        boolean notCharged = "PENDING".equals(b.orderStatus()) && b.charges() == 0
                                && "FAILED".equals(b.paymentStatus(request.requestNo()));
                        assertTrue(paidOnce || notCharged, () -> "PAID with one charge or PENDING with none: " + b);
                    }),
                    () -> assertOutcome(byBehaviour.get("ok"), books, "PAID", story),
                    () -> assertOutcome(byBehaviour.get("timeout_after_accept"), books, "PAID", story),
                    () -> assertOutcome(byBehaviour.get("decline"), books, "PENDING", story),
                    () -> EachRequest.assertForEach(all, story, request -> {
                        // the stored answer of a FAILED payment is a 402, and a decline only on the channel's word
                        if (!"FAILED".equals(books.get(request).paymentStatus(request.requestNo()))) {
                            return;
                        }
                        Answer stored = replays.get(request).get(0);
                        assertEquals(402, stored.status(), stored::toString);
                        assertEquals(charges.get(request).is("DECLINED"), "payment_declined".equals(stored.code()),
                                () -> "payment_declined exactly when the channel says DECLINED: " + stored + ", channel "
                                        + charges.get(request));
                    }),
                    () -> EachRequest.assertForEach(all, story, request -> {
                        List<Answer> finals = new ArrayList<>();
                        answers.get(request).stream().filter(ChannelRecoveryIT::isFinal).forEach(finals::add);
                        finals.addAll(replays.get(request));
                        for (Answer answer : finals) {
                            assertTrue(isFinal(answer), () -> "settled, so a replay is final: " + answer);
                            assertEquals(finals.get(0).status(), answer.status(), () -> "every copy the same: " + finals);
                            assertEquals(finals.get(0).body(), answer.body(), () -> "byte for byte: " + finals);
                        }
                    }),
                    () -> assertEquals(0, Operations.metricSum(w1, "payonce_settlement_disagreements_total"),
                            "W1: no owner holding a success found its payment settled otherwise"),
                    () -> assertEquals(0, Operations.metricSum(w2, "payonce_settlement_disagreements_total"),
                            "W2: no owner holding a success found its payment settled otherwise"));
        }

        private void assertOutcome(List<PayRequest> requests, Map<PayRequest, Books> books, String orderStatus,
                Function<PayRequest, String> story) {
            EachRequest.assertForEach(requests, story, request -> assertEquals(orderStatus,
                    books.get(request).orderStatus(), () -> "as the channel said: " + books.get(request)));
        }
    }

    /**
     * One instance that is its own channel, as the service runs out of the box, killed while its sandbox
     * holds a charge PENDING. The charge is a row with its outcome and time, so it takes effect on time with
     * nobody left to complete it, S (same database) sees it do so, and the restarted instance reconciles it.
     */
    @Nested
    @Order(2)
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    class OneInstanceWithItsOwnSandbox {

        private static final String MERCHANT = "merchant_own_sandbox";
        private static final long CHARGE_MS = 4_000;
        /**
         * After the owner's 202 (its channel call times out at 1 s), before its payment is old enough for any
         * reconciler (2 s): the charge is left to the channel and the restarted instance alone.
         */
        private static final long KILL_AFTER_MS = 1_500;

        private AppProcess instance;
        private PayClient client;
        /** S's sandbox, which reads the same charges table while the instance is dead. */
        private PayClient observer;

        @BeforeAll
        void startTheInstance() throws Exception {
            instance = AppProcess.named("channel-own-sandbox")
                    .env("PAYONCE_CHANNEL_TIMEOUT", seconds(CHANNEL_TIMEOUT))
                    .env("PAYONCE_RECONCILE_MIN_AGE", seconds(MIN_AGE))
                    .env("PAYONCE_IDEMPOTENCY_LEASE", seconds(LEASE))
                    .env("PAYONCE_RECONCILE_INTERVAL", "1s");
            instance.start().awaitReady();
            client = new PayClient(instance, MERCHANT);
            client.sandbox("ok", 0, 0);
            observer = new PayClient(sandbox, MERCHANT);
            assertEquals(200, client.pay(client.newRequest()).status(), "a warm-up payment");
        }

        @AfterAll
        void stopTheInstance() throws InterruptedException {
            AppProcess.closeAll(instance);
        }

        @Test
        void killedWhileItsSandboxHoldsACharge_chargeTakesEffectOnTime_andReconciliationPaysItOnce() throws Exception {
            // given: the instance's own sandbox charges the next payment 4 s after it arrives
            PayRequest request = client.newRequest();
            client.sandbox("ok", CHARGE_MS, 1);

            // when: it is paid, and the instance is killed 1.5 s later, the charge still PENDING
            long sent = System.nanoTime();
            CompletableFuture<Answer> first = CompletableFuture.supplyAsync(() -> client.pay(request), senders);
            assertTrue(Await.upTo(Duration.ofMillis(KILL_AFTER_MS - 300),
                    () -> observer.queryCharge(request.requestNo()).is("PENDING")),
                    () -> "the charge arrived and is pending: " + observer.queryCharge(request.requestNo()));
            // the kill lands while the charge is pending and before any reconciler may look at it
            Thread.sleep(Math.max(0, KILL_AFTER_MS - elapsedMs(sent)));
            instance.kill();
            ChannelCharge atKill = observer.queryCharge(request.requestNo());
            PayClient.Ledger ledgerAtKill = observer.ledger(request.orderNo());
            long readAtMs = elapsedMs(sent);

            // then: the client was told the outcome is unknown, or nothing at all
            Answer answer = first.get(5, TimeUnit.SECONDS);
            assertTrue(!answer.answered() || answer.status() == 202, () -> "202 or a broken connection: " + answer);
            if (answer.answered()) {
                assertEquals("PROCESSING", answer.field("status"), answer::toString);
            }
            // and: nothing was charged before the charge's time, and exactly one charge after it
            assertTrue(readAtMs < CHARGE_MS - 300, () -> "read before the charge's time, at " + readAtMs + " ms");
            assertTrue(atKill.is("PENDING"), () -> "pending when the instance died: " + atKill);
            assertEquals(0, ledgerAtKill.charges(), () -> "no charge yet: " + ledgerAtKill);
            assertTrue(Await.upTo(Duration.ofMillis(CHARGE_MS + 5_000),
                    () -> observer.queryCharge(request.requestNo()).is("SUCCEEDED")),
                    () -> "the charge took effect with its receiver dead: " + observer.queryCharge(request.requestNo()));
            assertEquals(1, observer.ledger(request.orderNo()).charges(), "one charge");

            // when: the instance comes back on its port and database
            instance.start().awaitReady();

            // then: reconciliation pays the order from the channel's record, and a retry gets the 200
            assertTrue(Await.upTo(SETTLE_BOUND, () -> !"PROCESSING".equals(client.paymentStatus(request.requestNo()))),
                    "settled within " + SETTLE_BOUND);
            PaymentRecord payment = client.payment(request.requestNo());
            assertEquals("SUCCEEDED", payment.status(), () -> "as the channel charged: " + payment);
            String txnId = observer.queryCharge(request.requestNo()).txnId();
            Answer retry = client.pay(request);
            assertEquals(200, retry.status(), () -> "the stored 200: " + retry);
            assertTrue(retry.isReplay(), () -> "replayed: " + retry);
            assertEquals(txnId, retry.field("channel_txn_id"), "the answer names the channel's transaction");
            Books books = observer.books(request.orderNo());
            assertEquals("PAID", books.orderStatus(), books::toString);
            assertEquals(1, books.charges(), () -> "never two charges: " + books);
        }
    }

    /**
     * A worker that gives up after 4 s on a charge the channel keeps PENDING for a minute. It may not report
     * the payment failed while the charge could still succeed: it closes the number at the channel first,
     * and only then answers that nothing was charged.
     */
    @Nested
    @Order(3)
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    class WorkerThatGivesUp {

        private static final String MERCHANT = "merchant_give_up";
        private static final Duration GIVE_UP_AFTER = Duration.ofSeconds(4);
        /** Far past everything this test waits for: only a close explains the charge never succeeding. */
        private static final long NEVER_MS = 60_000;

        private AppProcess worker;
        private PayClient client;
        private PayClient channel;

        @BeforeAll
        void startTheWorker() throws Exception {
            worker = worker("channel-give-up").env("PAYONCE_RECONCILE_GIVE_UP_AFTER", seconds(GIVE_UP_AFTER));
            worker.start().awaitReady();
            client = new PayClient(worker, MERCHANT);
            channel = channelFor(MERCHANT);
            assertEquals(200, client.pay(client.newRequest()).status(), "a warm-up payment");
        }

        @AfterAll
        void stopTheWorker() throws InterruptedException {
            AppProcess.closeAll(worker);
        }

        @Test
        void chargePendingPastGiveUp_isClosedAtTheChannel_thenANewRequestPaysTheOrder() throws Exception {
            // given: S holds the next charge PENDING for a minute
            PayRequest request = client.newRequest();
            channel.sandbox("ok", NEVER_MS, 1);

            // when: it is paid, and reconciliation runs past the give-up age
            Answer first = client.pay(request);
            assertEquals(202, first.status(), () -> "outcome unknown: " + first);
            assertTrue(Await.upTo(SETTLE_BOUND, () -> !"PROCESSING".equals(client.paymentStatus(request.requestNo()))),
                    () -> "settled within " + SETTLE_BOUND + ": " + client.payment(request.requestNo()));

            // then: closed at the channel, reported as not completed, nothing charged
            Books books = channel.books(request.orderNo());
            ChannelCharge atChannel = channel.queryCharge(request.requestNo());
            Answer retry = client.pay(request);
            assertEquals("FAILED", books.paymentStatus(request.requestNo()), books::toString);
            assertEquals("PENDING", books.orderStatus(), books::toString);
            assertTrue(atChannel.is("CLOSED"), () -> "closed at the channel before it was reported: " + atChannel);
            assertEquals(402, retry.status(), () -> "the stored 402: " + retry);
            assertEquals("payment_not_completed", retry.code(), () -> "not a decline, the channel declined nothing: "
                    + retry);
            assertTrue(retry.isReplay(), () -> "replayed: " + retry);
            assertEquals(0, books.charges(), books::toString);
            // and: the close holds; the same number charged again (its minute not yet up) charges nothing
            ChannelCharge chargedAgain = channel.chargeAtChannel(request);
            assertEquals(200, chargedAgain.httpStatus(), chargedAgain::toString);
            assertTrue(chargedAgain.is("CLOSED"), () -> "a closed number never succeeds: " + chargedAgain);
            assertEquals(0, channel.ledger(request.orderNo()).charges(), "still no charge");

            // when: the customer pays the order again, with a new token and request number
            PayRequest again = client.newAttempt(request);
            Answer paid = client.pay(again);

            // then
            assertEquals(200, paid.status(), () -> "paid: " + paid);
            assertEquals("PAID", paid.field("status"), paid::toString);
            Books after = channel.books(request.orderNo());
            assertEquals("PAID", after.orderStatus(), after::toString);
            assertEquals(1, after.charges(), after::toString);
        }
    }

    /** An answer the client keeps: neither "still running" (202, 409 request_in_progress, 503) nor none. */
    private static boolean isFinal(Answer answer) {
        return answer.answered() && answer.status() != 202 && !answer.isRetryable();
    }

    private static long elapsedMs(long startedNanos) {
        return (System.nanoTime() - startedNanos) / 1_000_000;
    }

    private static String seconds(Duration duration) {
        return duration.toSeconds() + "s";
    }
}
