package io.payonce.refund;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Concurrently;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.OrderRefunds;
import io.payonce.support.PayClient.RefundLedger;
import io.payonce.support.PayClient.RefundRequest;
import io.payonce.support.PayRequest;

/**
 * Two instances of the packaged application on one MySQL and one Redis, both refunding through A's sandbox
 * (one channel, one ledger): a refund runs on whichever instance gets it, copies of one refund split across
 * both are refunded once and all get its answer, and different refunds of one order racing over both are
 * refused by their amount alone, never beyond what was charged.
 */
class RefundMultiInstanceIT {

    private static final String MERCHANT = "merchant_refund_multi";
    private static final long PART = PayClient.AMOUNT * 3 / 10;
    /** Long enough that every racing refund is at the channel, its amount reserved, while the others open. */
    private static final long REFUND_LATENCY_MS = 700;
    private static final Duration RACE_BOUND = Duration.ofSeconds(40);

    private static AppProcess instanceA;
    private static AppProcess instanceB;
    private static PayClient onA;
    private static PayClient onB;

    @BeforeAll
    static void startTwoInstances() throws Exception {
        instanceA = AppProcess.named("refund-multi-a");
        instanceA.channel(instanceA.sandboxUrl()).env("PAYONCE_CHANNEL_TIMEOUT", "3s");
        instanceB = AppProcess.named("refund-multi-b").channel(instanceA.sandboxUrl())
                .env("PAYONCE_CHANNEL_TIMEOUT", "3s");
        AppProcess.startAll(instanceA, instanceB);
        onA = new PayClient(instanceA, MERCHANT);
        onB = new PayClient(instanceB, MERCHANT);
        onA.sandbox("ok", 0, 0);
        onA.refundBehavior("ok", 0, 0);
    }

    @AfterAll
    static void stopInstances() throws InterruptedException {
        AppProcess.closeAll(instanceA, instanceB);
    }

    @Test
    void orderPaidOnA_isRefundedThroughB_andAReadsTheRefund() {
        PayRequest paid = onA.paidOrder();
        RefundRequest refund = onB.newRefund(paid.orderNo(), PART);

        Answer answer = onB.refund(refund);

        assertEquals(200, answer.status(), answer::toString);
        assertEquals("REFUNDED", answer.field("status"));
        assertEquals(onA.channelRefundId(refund.refundNo()), answer.field("channel_refund_id"));
        OrderRefunds order = onA.orderRefunds(paid.orderNo());
        assertEquals("PARTIALLY_REFUNDED", order.status());
        assertEquals(PART, order.refundedAmount());
        assertEquals("SUCCEEDED", onA.refundStatus(refund.refundNo()));
        RefundLedger ledger = onA.refundLedger(paid.orderNo());
        assertEquals(1, ledger.refunds());
        assertEquals(PART, ledger.refundedAmount());
    }

    @Test
    void copiesOfOneRefundSplitAcrossInstances_refundOnce_andAllGetItsAnswer() {
        PayRequest paid = onA.paidOrder();
        RefundRequest refund = onA.newRefund(paid.orderNo(), PART);
        onA.refundBehavior("ok", REFUND_LATENCY_MS, 1);
        int copies = 16;

        List<Answer> answers = Concurrently.all(copies, RACE_BOUND,
                (group, copy) -> (copy % 2 == 0 ? onA : onB).refund(refund));

        String seen = answers.toString();
        assertEquals(1, answers.stream().map(a -> a.status() + " " + a.body()).distinct().count(),
                () -> "every copy on either instance got the same answer: " + seen);
        assertEquals(200, answers.get(0).status(), seen);
        assertEquals("REFUNDED", answers.get(0).field("status"));
        assertEquals(1, answers.stream().filter(a -> !a.isReplay()).count(), () -> "one first answer: " + seen);
        RefundLedger ledger = onA.refundLedger(paid.orderNo());
        assertEquals(1, ledger.refunds(), "one refund at the channel");
        assertEquals(1, ledger.refundAttempts(), "one refund call reached the channel");
        assertEquals(PART, ledger.refundedAmount());
        OrderRefunds order = onB.orderRefunds(paid.orderNo());
        assertEquals(PART, order.refundedAmount());
        assertEquals(1, order.refunds().size(), "one refund record");
    }

    /**
     * Ten refunds of 30% each, every one its own token and refund number, released at once over both
     * instances: three fit and are refunded, the other seven are refused for their amount; none is refused
     * for racing, none is left to retry, and the channel refunds no more than was charged.
     */
    @Test
    void tenRefundsOfThirtyPercentRacingOverBothInstances_threeSucceed_sevenExceedThePayment() {
        PayRequest paid = onA.paidOrder();
        List<RefundRequest> refunds = IntStream.range(0, 10)
                .mapToObj(i -> (i % 2 == 0 ? onA : onB).newRefund(paid.orderNo(), PART)).toList();
        onA.refundBehavior("ok", REFUND_LATENCY_MS, refunds.size());

        List<Answer> answers = Concurrently.all(refunds.size(), RACE_BOUND,
                (group, copy) -> (copy % 2 == 0 ? onA : onB).refund(refunds.get(copy)));

        String seen = tally(answers) + ", " + unexpected(answers);
        assertEquals(3, answers.stream().filter(a -> a.status() == 200).count(), () -> "three refunded: " + seen);
        assertEquals(7, answers.stream().filter(a -> a.status() == 422 && "refund_exceeds_payment".equals(a.code()))
                .count(), () -> "seven refused for their amount: " + seen);
        RefundLedger ledger = onA.refundLedger(paid.orderNo());
        assertEquals(3, ledger.refunds(), () -> "three refunds at the channel: " + seen);
        assertEquals(3 * PART, ledger.refundedAmount(), () -> "the channel's refunded amount: " + seen);
        assertTrue(ledger.refundedAmount() <= PayClient.AMOUNT, "never more than was charged");
        OrderRefunds order = onB.orderRefunds(paid.orderNo());
        assertEquals(ledger.refundedAmount(), order.refundedAmount(), "the order agrees with the ledger");
        assertEquals("PARTIALLY_REFUNDED", order.status());
        assertEquals(3, order.refunds().size(), () -> "a record for each refund that fit: " + order.refunds());
    }

    /** The answers other than a 200 or a 422 refund_exceeds_payment, whole: what a failed race shows. */
    static List<Answer> unexpected(List<Answer> answers) {
        return answers.stream().filter(a -> a.status() != 200 && !"refund_exceeds_payment".equals(a.code())).toList();
    }

    /** How many answers of each kind: status and problem code, or no answer. */
    static String tally(List<Answer> answers) {
        Map<String, Long> kinds = answers.stream().collect(Collectors.groupingBy(
                a -> a.answered() ? a.status() + (a.code() != null ? " " + a.code() : "") : "no answer", TreeMap::new,
                Collectors.counting()));
        return kinds.toString();
    }
}
