package io.payonce.refund;

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

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer.OrderAnnotation;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.function.Executable;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.OrderRefunds;
import io.payonce.support.PayClient.RefundLedger;
import io.payonce.support.PayClient.RefundRequest;
import io.payonce.support.WorkerAndSandbox;

/**
 * A worker instance W is killed with SIGKILL while refunds of paid orders are at three stages: (c) made by
 * the channel, its answer not back yet; (b) under way at the channel, which takes 3 s to refund; (a)
 * just sent to W. The channel is the sandbox of a second
 * instance S, never killed, whose ledger outlives W. W is started again and reconciles; then every refund
 * must be settled on the channel's word (the order's refunded amount is the ledger's, with at most one
 * refund per refund number), and a retry of every original request must get the final answer those books
 * imply, without the refund being sent again.
 *
 * <p>One crash serves every test of the class: they read, in order, what it left behind.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(OrderAnnotation.class)
class RefundCrashIT {

    private static final String MERCHANT = "merchant_refund_crash";
    private static final Duration MIN_AGE = Duration.ofSeconds(2);
    private static final Duration LEASE = Duration.ofSeconds(4);
    /**
     * Far longer than W's 1 s channel timeout: W dies while the channel is still refunding even when a busy
     * machine delays the kill past that timeout (W has then answered 202 and left the refund PROCESSING).
     */
    private static final long SLOW_REFUND_MS = 3000;
    /** How far into a slow refund W dies: well inside it, and normally inside W's 1 s channel timeout. */
    private static final long INTO_THE_REFUND_MS = 400;
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(20);
    private static final long PART = PayClient.AMOUNT * 3 / 10;

    private WorkerAndSandbox instances;
    private AppProcess worker;
    private PayClient channel;
    private PayClient client;
    private ExecutorService senders;

    private List<RefundRequest> afterAccept;
    private List<RefundRequest> duringRefund;
    private List<RefundRequest> justSent;
    private final Map<RefundRequest, Answer> beforeKill = new LinkedHashMap<>();
    private final Map<RefundRequest, RefundLedger> afterCrash = new LinkedHashMap<>();
    private final Map<RefundRequest, RefundLedger> ledgerAfterRecovery = new LinkedHashMap<>();
    private final Map<RefundRequest, OrderRefunds> orderAfterRecovery = new LinkedHashMap<>();
    private long settledAfterMs;

    @BeforeAll
    void killWorkerMidRefunds_thenRestartIt() throws Exception {
        // until the crash W reconciles nothing (default min-age): what it leaves must be a dead process's
        instances = WorkerAndSandbox.named("refund-crash").worker("PAYONCE_IDEMPOTENCY_LEASE", LEASE.toSeconds() + "s");
        instances.start(MERCHANT);
        worker = instances.worker();
        channel = instances.channel();
        client = instances.client();
        warmUp();

        // two partial refunds made by the channel; two partial ones and one in full under way; four just sent
        afterAccept = List.of(client.newRefund(client.paidOrder().orderNo(), PART),
                client.newRefund(client.paidOrder().orderNo(), PART));
        duringRefund = List.of(client.newRefund(client.paidOrder().orderNo(), PART),
                client.newRefund(client.paidOrder().orderNo(), PART),
                client.newRefund(client.paidOrder().orderNo(), PayClient.AMOUNT));
        justSent = List.of(client.newRefund(client.paidOrder().orderNo(), PART),
                client.newRefund(client.paidOrder().orderNo(), PART), client.newRefund(client.paidOrder().orderNo(), PART),
                client.newRefund(client.paidOrder().orderNo(), PART));
        senders = Executors.newFixedThreadPool(16);
        Map<RefundRequest, CompletableFuture<Answer>> inFlight = new LinkedHashMap<>();

        // recorded at the channel at once, answered only after W's channel timeout
        channel.refundBehavior("timeout_after_accept", 0, afterAccept.size());
        afterAccept.forEach(refund -> inFlight.put(refund, send(refund)));
        Await.until("the late refunds to be made", Duration.ofSeconds(3), () -> afterAccept.stream()
                .allMatch(refund -> channel.refundLedger(refund.orderNo()).refunds() == 1));

        channel.refundBehavior("ok", SLOW_REFUND_MS, duringRefund.size() + justSent.size());
        duringRefund.forEach(refund -> inFlight.put(refund, send(refund)));
        Await.until("the slow refunds to arrive at the channel", Duration.ofSeconds(3), () -> duringRefund.stream()
                .allMatch(refund -> channel.refundLedger(refund.orderNo()).refundAttempts() == 1));
        Thread.sleep(INTO_THE_REFUND_MS);
        // sent 70, 30, 10 and 0 ms before W dies, so they die at different early steps
        long[] pauses = { 40, 20, 10, 0 };
        for (int i = 0; i < justSent.size(); i++) {
            inFlight.put(justSent.get(i), send(justSent.get(i)));
            Thread.sleep(pauses[i]);
        }
        worker.kill();

        for (var sent : inFlight.entrySet()) {
            beforeKill.put(sent.getKey(), sent.getValue().get(5, TimeUnit.SECONDS));
        }
        all().forEach(refund -> afterCrash.put(refund, channel.refundLedger(refund.orderNo())));

        worker.env("PAYONCE_RECONCILE_MIN_AGE", MIN_AGE.toSeconds() + "s").start().awaitReady();
        long restarted = System.nanoTime();
        // bounded; the tests judge whatever is left unsettled
        Await.upTo(SETTLE_BOUND, () -> all().stream().noneMatch(refund -> "PROCESSING".equals(
                client.refundStatus(refund.refundNo()))));
        settledAfterMs = (System.nanoTime() - restarted) / 1_000_000;
        for (RefundRequest refund : all()) {
            ledgerAfterRecovery.put(refund, channel.refundLedger(refund.orderNo()));
            orderAfterRecovery.put(refund, client.orderRefunds(refund.orderNo()));
        }
        // what each refund met, for a reader of a passing run too
        all().forEach(refund -> System.out.println("RefundCrashIT: " + story(refund)));
        channel.refundBehavior("ok", 0, 0);
    }

    @AfterAll
    void stop() throws InterruptedException {
        if (senders != null) {
            senders.shutdownNow();
        }
        if (instances != null) {
            instances.close();
        }
    }

    /**
     * The channel completes a refund it accepted whatever its caller does, and its answer may never come
     * back; reconciliation asks the channel, and books the one refund it made.
     */
    @Test
    @Order(1)
    void acceptedByTheChannelBeforeTheCrash_reconciliationBooksTheOneRefundTheChannelMade() {
        List<RefundRequest> accepted = new ArrayList<>(afterAccept);
        accepted.addAll(duringRefund);
        assertForEach(accepted, refund -> {
            RefundLedger crash = afterCrash.get(refund);
            assertTrue(crash.refundAttempts() == 1 && crash.refunds() == (afterAccept.contains(refund) ? 1 : 0),
                    "W died after the channel made the refund (c), or while it was under way (b)");
            RefundLedger ledger = ledgerAfterRecovery.get(refund);
            OrderRefunds order = orderAfterRecovery.get(refund);
            assertEquals(1, ledger.refunds(), "exactly one refund at the channel");
            assertEquals(1, ledger.refundAttempts(), "the refund call reached the channel once: recovery only asked");
            assertEquals(refund.amount(), ledger.refundedAmount(), "the channel refunded the amount asked");
            assertEquals(ledger.refundedAmount(), order.refundedAmount(), "the order's refunded amount is the ledger's");
            assertEquals(refund.amount() == PayClient.AMOUNT ? "REFUNDED" : "PARTIALLY_REFUNDED", order.status());
            assertEquals("SUCCEEDED", client.refundStatus(refund.refundNo()), "the refund record");
        });
    }

    /** Whatever stage W died at, the order's books and the channel's agree, and nothing is left in flight. */
    @Test
    @Order(2)
    void afterRecovery_everyOrdersRefundedAmountIsTheLedgers() {
        assertForEach(all(), refund -> {
            RefundLedger ledger = ledgerAfterRecovery.get(refund);
            OrderRefunds order = orderAfterRecovery.get(refund);
            assertTrue(ledger.refunds() <= 1, "at most one refund at the channel");
            assertEquals(ledger.refundedAmount(), order.refundedAmount(), "the order's refunded amount is the ledger's");
            assertEquals(order.refundedAmount() == 0 ? "PAID"
                    : order.refundedAmount() == PayClient.AMOUNT ? "REFUNDED" : "PARTIALLY_REFUNDED", order.status());
            assertTrue(order.refunds().stream().noneMatch(r -> "PROCESSING".equals(r.get("status"))),
                    "no refund left PROCESSING");
        });
    }

    /**
     * The same request again, same token and body, to the restarted W: a refund the channel made gets the
     * stored 200, replayed, naming the channel's refund; one it never made gets a 402 or, with no record
     * left of it, a fresh execution that refunds. Never a 202 or a 409. Nothing is refunded twice.
     */
    @Test
    @Order(3)
    void retryOfEveryRequest_getsTheFinalAnswerItsBooksImply_andRefundsNothingAgain() throws Exception {
        Map<RefundRequest, CompletableFuture<Answer>> retries = new LinkedHashMap<>();
        all().forEach(refund -> retries.put(refund, send(refund)));
        Map<RefundRequest, Answer> answers = new LinkedHashMap<>();
        for (var retry : retries.entrySet()) {
            answers.put(retry.getKey(), retry.getValue().get(30, TimeUnit.SECONDS));
        }
        assertForEach(all(), refund -> {
            RefundLedger before = ledgerAfterRecovery.get(refund);
            Answer retry = answers.get(refund);
            if (before.refunds() == 1) {
                assertEquals(200, retry.status(), () -> "refunded: the stored 200 is replayed, got " + retry);
                assertTrue(retry.isReplay(), () -> "a replay: " + retry);
                assertEquals("REFUNDED", retry.field("status"));
                assertEquals(refund.refundNo(), retry.field("refund_no"));
                String refundId = channel.channelRefundId(refund.refundNo());
                assertNotNull(refundId, "the channel's refund");
                assertEquals(refundId, retry.field("channel_refund_id"), "the answer names the channel's refund");
            } else if (retry.status() == 402) {
                assertTrue(retry.isReplay(), () -> "settled as not refunded: the stored 402 is replayed, got " + retry);
            } else {
                assertEquals(200, retry.status(), () -> "no refund record: a fresh execution refunds, got " + retry);
            }
            Answer again = client.refund(refund);
            assertEquals(retry.status(), again.status(), () -> "a second copy gets the same answer: " + again);
            assertEquals(retry.body(), again.body(), "byte for byte");
            assertTrue(again.isReplay(), () -> "a replay: " + again);

            RefundLedger after = channel.refundLedger(refund.orderNo());
            OrderRefunds order = client.orderRefunds(refund.orderNo());
            assertEquals(retry.status() == 200 ? 1 : 0, after.refunds(), "one refund when answered 200, else none");
            if (before.refunds() == 1) {
                assertEquals(before.refundAttempts(), after.refundAttempts(), "the replays sent nothing to the channel");
            }
            assertEquals(after.refundedAmount(), order.refundedAmount(), "the order agrees with the ledger");
        });
    }

    /** A payment and a refund through W, so the crash finds both processes past their first, slow requests. */
    private void warmUp() {
        String orderNo = instances.warmUp().orderNo();
        Answer refunded = client.refund(client.newRefund(orderNo, PART));
        assertEquals(200, refunded.status(), () -> "a warm-up refund: " + refunded);
        channel.refundLedger(orderNo);
    }

    private List<RefundRequest> all() {
        List<RefundRequest> all = new ArrayList<>(afterAccept);
        all.addAll(duringRefund);
        all.addAll(justSent);
        return all;
    }

    private CompletableFuture<Answer> send(RefundRequest refund) {
        return CompletableFuture.supplyAsync(() -> client.refund(refund), senders);
    }

    /** A refund's whole story, for the message of any check of it that fails. */
    private String story(RefundRequest refund) {
        return (afterAccept.contains(refund) ? "(c) made by the channel " : duringRefund.contains(refund)
                ? "(b) during the refund " : "(a) just sent ") + refund
                + " (before the kill: " + beforeKill.get(refund) + "; ledger after the crash: " + afterCrash.get(refund)
                + "; recovered " + settledAfterMs + " ms after W was ready again: " + orderAfterRecovery.get(refund)
                + ", " + ledgerAfterRecovery.get(refund) + ")";
    }

    @FunctionalInterface
    private interface Check {
        void accept(RefundRequest refund) throws Exception;
    }

    private void assertForEach(List<RefundRequest> refunds, Check check) {
        assertAll(refunds.stream().map(refund -> (Executable) () -> {
            try {
                check.accept(refund);
            } catch (AssertionError e) {
                throw new AssertionError(story(refund) + ": " + e.getMessage(), e);
            }
        }));
    }
}
