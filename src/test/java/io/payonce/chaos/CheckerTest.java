package io.payonce.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.payonce.chaos.Books.ChannelRefund;
import io.payonce.chaos.Books.PaymentRow;
import io.payonce.chaos.Books.RefundLedger;
import io.payonce.chaos.Books.RefundRow;
import io.payonce.chaos.FaultSchedule.Fault;
import io.payonce.chaos.FaultSchedule.Kind;
import io.payonce.chaos.History.Attempt;
import io.payonce.chaos.History.OrderSeen;
import io.payonce.chaos.History.QueueCopy;
import io.payonce.chaos.History.Refund;
import io.payonce.chaos.History.Request;
import io.payonce.support.Answer;
import io.payonce.support.PayClient.ChannelCharge;
import io.payonce.support.PayClient.Ledger;
import io.payonce.support.PayRequest;
import io.payonce.support.QueueAnswer;

/**
 * What the checker accepts of a paused owner, of a 503 (and a 409 request_in_progress), of queue commands and
 * their dead letters, and of refunds, on histories written by hand: each test gives the copies a client sent (by
 * HTTP, or as queue commands with every answer their reply queue received and its {@code final} header), with
 * their answers and times, the commands found in payonce.dead, and the rows and the channel's word behind them.
 */
class CheckerTest {

    private static final String MERCHANT = "m_test";
    private static final String TXN = "txn_1";
    private static final String PAID = "{\"order_no\":\"o1\",\"request_no\":\"o1_r1\",\"status\":\"PAID\",\"channel_txn_id\":\""
            + TXN + "\"}";
    private static final String UNAVAILABLE = "{\"code\":\"temporarily_unavailable\"}";
    private static final String ACCEPTED = "{\"order_no\":\"o1\",\"request_no\":\"o1_r1\",\"status\":\"PROCESSING\"}";
    private static final String DECLINED = "{\"code\":\"payment_declined\"}";
    private static final String IN_PROGRESS = "{\"code\":\"request_in_progress\"}";
    private static final String NOT_PAYABLE = "{\"code\":\"order_not_payable\"}";
    private static final String REFUND_DECLINED = "{\"code\":\"refund_declined\"}";
    private static final String EXCEEDS = "{\"code\":\"refund_exceeds_payment\"}";
    /** The wall clock's reading at run time 0 in these histories. */
    private static final long EPOCH_AT_ZERO = 1_800_000_000_000L;

    private final ChaosSettings settings = new ChaosSettings(Duration.ofSeconds(60), 1, 2, 1, 1, Duration.ofSeconds(1),
            "127.0.0.1", 3306, "unused", "root", "", "test");
    private final History history = new History();
    private final Books books = new Books();
    private final Request request = history.newRequest(MERCHANT, 0, new PayRequest("o1", "o1_r1", "tok_1", 1999), true);

    @Test
    void anOpeningStandingFromBeforeA503_isA503FollowedByACharge() {
        sent(direct(0), 1_000, answer(503, UNAVAILABLE, 2_500));
        sent(direct(1), 5_000, answer(200, PAID, 40));
        paidAtTheChannel(/* opened at */ 1_200);

        assertEquals(List.of(Checker.AFTER_503), violations());
    }

    @Test
    void aRetryAfterA503OpensTheRequestAgain_isNoViolation() {
        sent(direct(0), 1_000, answer(503, UNAVAILABLE, 2_500));
        sent(direct(1), 4_000, answer(200, PAID, 40));
        paidAtTheChannel(/* opened at */ 4_010);

        assertEquals(List.of(), violations());
    }

    @Test
    void a503WhileAnotherCopyOfTheRequestWasStillRunning_isNotHeldToIt() {
        sent(direct(1), 900, answer(200, PAID, 5_000));
        sent(direct(0), 1_000, answer(503, UNAVAILABLE, 2_500));
        paidAtTheChannel(/* opened at */ 950);

        assertEquals(List.of(), violations());
    }

    @Test
    void a503ThroughTheGateway_evenAfterALongWait_isHeldToItAsADirectOne() {
        // the gateway passes a request on only when the first instance never received it: the 503 is the
        // answer of the one instance that did
        sent(gateway(), 1_000, answer(503, UNAVAILABLE, 3_600));
        sent(direct(1), 6_000, answer(200, PAID, 40));
        paidAtTheChannel(/* opened at */ 1_100);

        assertEquals(List.of(Checker.AFTER_503), violations());
    }

    @Test
    void anOwnerPausedWhileItRuns_mayAnswerLateByItsPause() {
        paused(0, /* from */ 0, /* to */ 8_000);
        sent(direct(0), 0, answer(200, PAID, 12_000));
        paidAtTheChannel(/* opened at */ 10);

        assertEquals(List.of(), violations());
    }

    @Test
    void anOwnerPausedWhileItRuns_mayLeaveTheClientWithoutAnAnswer() {
        paused(0, 0, 8_000);
        sent(direct(0), 0, noAnswer("java.net.SocketTimeoutException: Read timed out", 15_000));
        sent(direct(1), 16_000, answer(200, PAID, 40));
        paidAtTheChannel(/* opened at */ 10);

        assertEquals(List.of(), violations());
    }

    @Test
    void anotherInstancesPause_excusesNothing() {
        paused(1, 0, 8_000);
        sent(direct(0), 0, answer(200, PAID, 12_000));
        paidAtTheChannel(/* opened at */ 10);

        assertEquals(List.of(Checker.SLOW_WAIT), violations());
    }

    @Test
    void aQueueCommandAnswered202ThenSettled_andTheSettledAnswerTwice_isNoViolation() {
        commanded(1_000, heard(202, null, ACCEPTED, 300), heard(200, null, PAID, 4_000), heard(200, null, PAID, 4_100));
        paidAtTheChannel(/* opened at */ 1_100);

        assertEquals(List.of(), violations());
    }

    @Test
    void aQueueCommandLeftWithIts202_whileItsPaymentSettled_isNeverFinallyAnswered() {
        commanded(1_000, heard(202, null, ACCEPTED, 300));
        sent(direct(0), 6_000, answer(200, PAID, 40));
        paidAtTheChannel(/* opened at */ 1_100);

        assertEquals(List.of(Checker.QUEUE_UNANSWERED), violations());
    }

    @Test
    void aQueueCommandNeverAnswered_whileItsPaymentSettled_isNeverFinallyAnswered() {
        sent(direct(0), 500, answer(200, PAID, 40));
        commanded(1_000);
        paidAtTheChannel(/* opened at */ 510);

        assertEquals(List.of(Checker.QUEUE_UNANSWERED), violations());
    }

    @Test
    void aQueueCommandDeadLetteredWithA503_andPaidByARetryAfter_isNoViolation() {
        deadLetteredAfterA503(/* sent at */ 1_000, /* dead at */ 13_000);
        sent(direct(0), 14_000, answer(200, PAID, 40));
        paidAtTheChannel(/* opened at */ 14_010);

        assertEquals(List.of(), violations());
    }

    @Test
    void aQueueCommandTold503AndNothingMore_whileItsPaymentSettled_butNotDeadLettered_isNeverFinallyAnswered() {
        commanded(1_000, told503(1_000));
        sent(direct(0), 4_000, answer(200, PAID, 40));
        paidAtTheChannel(/* opened at */ 4_010);

        assertEquals(List.of(Checker.QUEUE_UNANSWERED), violations());
    }

    @Test
    void aQueueCommandWithoutAFinalAnswer_whosePaymentSettledThoughNoCopyWasToldSo_isNeverFinallyAnswered() {
        commanded(1_000, heard(202, null, ACCEPTED, 300));
        paidAtTheChannel(/* opened at */ 1_100);

        assertEquals(List.of(Checker.QUEUE_UNANSWERED, Checker.NEVER_ANSWERED), violations());
    }

    @Test
    void aQueueCommandsFinalLookingAnswerMarkedNotFinal_isMarkedWrongly_andLeavesItWithoutAFinalAnswer() {
        commanded(1_000, marked(200, null, PAID, 300, false));
        paidAtTheChannel(/* opened at */ 1_100);

        assertEquals(List.of(Checker.QUEUE_FINAL_HEADER, Checker.QUEUE_UNANSWERED), violations());
    }

    @Test
    void aQueueCommands202MarkedFinal_isMarkedWrongly_andUnlikeItsSettledAnswer() {
        commanded(1_000, marked(202, null, ACCEPTED, 300, true), heard(200, null, PAID, 4_000));
        paidAtTheChannel(/* opened at */ 1_100);

        assertEquals(List.of(Checker.QUEUE_FINAL_HEADER, Checker.QUEUE_DIFFERENT), violations());
    }

    @Test
    void aQueueAnswerWithoutTheFinalHeader_isMarkedWrongly() {
        commanded(1_000, marked(200, null, PAID, 300, null), heard(200, null, PAID, 400));
        paidAtTheChannel(/* opened at */ 1_100);

        assertEquals(List.of(Checker.QUEUE_FINAL_HEADER), violations());
    }

    @Test
    void a409RequestInProgressBeforeTheFinalAnswer_byHttpOrOnTheQueue_isNoViolation() {
        sent(direct(0), 1_000, answer(200, PAID, 3_000));
        sent(direct(1), 1_100, answer(409, IN_PROGRESS, 2_000));
        commanded(1_200, heard(409, "request_in_progress", IN_PROGRESS, 2_000), heard(200, null, PAID, 3_500));
        paidAtTheChannel(/* opened at */ 1_010);

        assertEquals(List.of(), violations());
    }

    @Test
    void aDeadLetterWhosePaymentWasOpenedLongBefore_isAnExecutedCommandDeadLettered() {
        sent(direct(0), 900, answer(200, PAID, 4_100));
        deadLetteredAfterA503(/* sent at */ 1_000, /* dead at */ 13_000);
        paidAtTheChannel(/* opened at */ 950);

        assertEquals(List.of(Checker.DEAD_EXECUTED), violations());
    }

    @Test
    void aDeadLetterWhoseTokenWasSettledLongBefore_isAnExecutedCommandDeadLettered() {
        deadLetteredAfterA503(/* sent at */ 1_000, /* dead at */ 13_000);
        sent(direct(0), 14_000, answer(409, NOT_PAYABLE, 40));
        books.tokens.put(Books.key(MERCHANT, "tok_1"), new Books.TokenRow(MERCHANT, "tok_1", "COMPLETED", 409,
                NOT_PAYABLE, EPOCH_AT_ZERO + 2_000));

        assertEquals(List.of(Checker.DEAD_EXECUTED), violations());
    }

    @Test
    void aQueueCommandWhosePaymentNeverSettled_isNamedByItsRequestOnly() {
        commanded(1_000, heard(202, null, ACCEPTED, 300));

        assertEquals(List.of(Checker.NEVER_ANSWERED), violations());
    }

    @Test
    void aQueueCommandsSecondAnswerDiffering_isAnsweredDifferently() {
        commanded(1_000, heard(200, null, PAID, 300), heard(402, "payment_declined", DECLINED, 900));
        paidAtTheChannel(/* opened at */ 1_100);

        assertEquals(List.of(Checker.QUEUE_DIFFERENT), violations());
    }

    @Test
    void aQueueCommandsAnswersDifferingInTheirCodeHeaderOnly_areAnsweredDifferently() {
        commanded(1_000, heard(402, "payment_declined", DECLINED, 300), heard(402, "payment_failed", DECLINED, 900));
        declinedAtTheChannel();

        assertEquals(List.of(Checker.QUEUE_DIFFERENT), violations());
    }

    @Test
    void aQueueAnswerUnlikeAnHttpAnswerOfTheSameRequest_isDifferentFinalAnswers() {
        sent(direct(0), 500, answer(200, PAID, 40));
        commanded(1_000, heard(402, "payment_declined", DECLINED, 300));
        paidAtTheChannel(/* opened at */ 510);

        assertEquals(List.of(Checker.DIFFERENT_ANSWERS, Checker.PHANTOM_DECLINE), violations());
    }

    @Test
    void aQueueCommandTold503_thenPaidUnderThePaymentOpenedBefore_isA503FollowedByACharge() {
        commanded(1_000, told503(2_000), heard(200, null, PAID, 4_000));
        paidAtTheChannel(/* opened at */ 1_100);

        assertEquals(List.of(Checker.AFTER_503), violations());
    }

    @Test
    void aQueueCommandTold503_whileAnHttpCopyOfItWasStillRunning_isNotHeldToIt() {
        sent(direct(1), 900, answer(200, PAID, 5_000));
        commanded(1_000, told503(1_500), heard(200, null, PAID, 4_500));
        paidAtTheChannel(/* opened at */ 950);

        assertEquals(List.of(), violations());
    }

    @Test
    void aRefundBorneOutByItsRecordTheLedgerAndTheOrder_isNoViolation() {
        paid();
        Refund refund = refund("o1_f1", 1_000);
        sent(refund, 2_000, answer(200, refunded("o1_f1", 1_000, "sbr_1"), 60));
        sent(refund, 2_010, replayed(200, refunded("o1_f1", 1_000, "sbr_1"), 70));
        refundRecord("o1_f1", 1_000, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("PARTIALLY_REFUNDED", 1_000, 0, 1, 1_000);

        assertEquals(List.of(), violations());
    }

    @Test
    void aLedgerRefundingMoreThanWasCharged_isARefundOverTheCharge() {
        paid();
        refundRecord("o1_f1", 2_500, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("REFUNDED", 2_500, 0, 2, 3_000);

        assertEquals(List.of(Checker.REFUND_OVER_CHARGE, Checker.REFUND_LEDGER_VS_ORDER), violations());
    }

    @Test
    void aLedgerRefundingOtherwiseThanTheOrderShows_isTheRefundLedgerDisagreeing() {
        paid();
        refundRecord("o1_f1", 1_000, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("PARTIALLY_REFUNDED", 500, 0, 1, 1_000);

        assertEquals(List.of(Checker.REFUND_LEDGER_VS_ORDER), violations());
    }

    @Test
    void aLedgerCountingAnotherNumberOfRefundsThanSucceededRecords_isTheRefundLedgerDisagreeing() {
        paid();
        refundRecord("o1_f1", 1_000, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("PARTIALLY_REFUNDED", 1_000, 0, 2, 1_000);

        assertEquals(List.of(Checker.REFUND_LEDGER_VS_ORDER), violations());
    }

    @Test
    void twoCopiesOfARefundAnsweredDifferently_areDifferentFinalAnswersToARefund() {
        paid();
        Refund refund = refund("o1_f1", 1_000);
        sent(refund, 2_000, answer(200, refunded("o1_f1", 1_000, "sbr_1"), 60));
        sent(refund, 3_000, answer(402, REFUND_DECLINED, 60));
        refundRecord("o1_f1", 1_000, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("PARTIALLY_REFUNDED", 1_000, 0, 1, 1_000);

        assertEquals(List.of(Checker.REFUND_DIFFERENT), violations());
    }

    @Test
    void a200RefundedUnderAnotherRefundIdThanItsRecords_isTheRecordDisagreeingWithTheAnswer() {
        paid();
        Refund refund = refund("o1_f1", 1_000);
        sent(refund, 2_000, answer(200, refunded("o1_f1", 1_000, "sbr_9"), 60));
        refundRecord("o1_f1", 1_000, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("PARTIALLY_REFUNDED", 1_000, 0, 1, 1_000);

        assertEquals(List.of(Checker.REFUND_VS_ANSWER), violations());
    }

    @Test
    void a402RefundDeclinedWhoseRecordSucceeded_isTheRecordDisagreeingWithTheAnswer() {
        paid();
        Refund refund = refund("o1_f1", 1_000);
        sent(refund, 2_000, answer(402, REFUND_DECLINED, 60));
        refundRecord("o1_f1", 1_000, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("PARTIALLY_REFUNDED", 1_000, 0, 1, 1_000);

        assertEquals(List.of(Checker.REFUND_VS_ANSWER), violations());
    }

    @Test
    void a422RefundWithARecord_isTheRecordDisagreeingWithTheAnswer() {
        paid();
        Refund refund = refund("o1_f1", 3_000);
        sent(refund, 2_000, answer(422, EXCEEDS, 60));
        refundRecord("o1_f1", 3_000, "FAILED", "DECLINED", null, "DECLINED");
        order("PAID", 0, 0, 0, 0);

        assertEquals(List.of(Checker.REFUND_VS_ANSWER), violations());
    }

    @Test
    void aRefundRecordSucceededTheChannelNeverRefunded_isTheRecordDisagreeingWithTheChannel() {
        paid();
        refundRecord("o1_f1", 1_000, "SUCCEEDED", null, "sbr_1", null);
        order("PARTIALLY_REFUNDED", 1_000, 0, 1, 1_000);

        assertEquals(List.of(Checker.REFUND_VS_CHANNEL), violations());
    }

    @Test
    void anOrderRefundedWithPartOfItsAmountRefunded_isAStatusDisagreeingWithTheRefundedAmount() {
        paid();
        refundRecord("o1_f1", 1_000, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("REFUNDED", 1_000, 0, 1, 1_000);

        assertEquals(List.of(Checker.REFUND_STATUS), violations());
    }

    @Test
    void anOrderStillPaidWithSomethingRefunded_isAStatusDisagreeingWithTheRefundedAmount() {
        paid();
        refundRecord("o1_f1", 1_000, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("PAID", 1_000, 0, 1, 1_000);

        assertEquals(List.of(Checker.REFUND_STATUS), violations());
    }

    @Test
    void aRefundAnsweredOnly503_isNeverFinallyAnswered() {
        paid();
        Refund refund = refund("o1_f1", 1_000);
        sent(refund, 2_000, answer(503, UNAVAILABLE, 60));
        order("PAID", 0, 0, 0, 0);

        assertEquals(List.of(Checker.REFUND_NEVER_ANSWERED), violations());
    }

    @Test
    void a422ThoughEveryRefundAskedFits_isARefundRefusedWithoutReason() {
        paid();
        Refund first = refund("o1_f1", 1_000);
        sent(first, 2_000, answer(200, refunded("o1_f1", 1_000, "sbr_1"), 60));
        Refund second = refund("o1_f2", 1_000);
        sent(second, 2_000, answer(422, EXCEEDS, 60));
        refundRecord("o1_f1", 1_000, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("PARTIALLY_REFUNDED", 1_000, 0, 1, 1_000);

        assertEquals(List.of(Checker.REFUND_REFUSED), violations());
    }

    @Test
    void a422OfRefundsAskingMoreThanWasPaid_isNoViolation() {
        paid();
        Refund first = refund("o1_f1", 2_000);
        sent(first, 2_000, answer(200, refunded("o1_f1", 2_000, "sbr_1"), 60));
        Refund second = refund("o1_f2", 1_000);
        sent(second, 2_000, answer(422, EXCEEDS, 60));
        refundRecord("o1_f1", 2_000, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("PARTIALLY_REFUNDED", 2_000, 0, 1, 2_000);

        assertEquals(List.of(), violations());
    }

    @Test
    void anOrderSeenPartlyRefundedThenPaid_hasMovedBack_whileA200PaidReplayedMeanwhileHasNot() {
        paid();
        seen("PARTIALLY_REFUNDED", 1_000, 3_000);
        sent(direct(1), 3_500, replayed(200, PAID, 40));
        seen("PARTIALLY_REFUNDED", 1_000, 4_000);
        refundRecord("o1_f1", 1_000, "SUCCEEDED", null, "sbr_1", "SUCCEEDED");
        order("PARTIALLY_REFUNDED", 1_000, 0, 1, 1_000);
        assertEquals(List.of(), violations());

        seen("PAID", 0, 5_000);
        assertEquals(List.of(Checker.MOVED_BACK), violations());
    }

    @Test
    void anAmountStillReservedOnceSettled_isLeftInFlight() {
        paid();
        order("PAID", 0, 700, 0, 0);

        assertEquals(List.of(Checker.LEFT_IN_FLIGHT), violations());
    }

    private List<String> violations() {
        List<String> names = new ArrayList<>();
        Checker.check(settings, history, books).forEach(v -> names.add(v.name()));
        return names;
    }

    private record Route(String name, int instance) {
    }

    private static Route direct(int instance) {
        return new Route("direct" + instance, instance);
    }

    private static Route gateway() {
        return new Route("gw0", -1);
    }

    private void sent(Route route, long atMs, Answer answer) {
        request.add(new Attempt(0, route.name(), route.instance(), atMs, "traffic", false, answer,
                EPOCH_AT_ZERO + atMs + answer.elapsedMs()));
    }

    /** A queue command sent at {@code atMs}, and what its reply queue received. */
    private QueueCopy commanded(long atMs, QueueAnswerAt... answers) {
        QueueCopy copy = new QueueCopy(0, atMs, EPOCH_AT_ZERO + atMs, "traffic", false, "amq.gen-replies",
                "corr-" + atMs, null);
        request.add(copy);
        List<QueueAnswer> received = new ArrayList<>();
        for (QueueAnswerAt answer : answers) {
            received.add(answer.answer());
            copy.heard(received, atMs + answer.afterMs());
        }
        return copy;
    }

    /**
     * A queue command sent at {@code sentAtMs}, answered 503 (not final) by the entrance a second before it
     * dead-lettered it at {@code deadAtMs}, and found in payonce.dead.
     */
    private void deadLetteredAfterA503(long sentAtMs, long deadAtMs) {
        QueueCopy command = commanded(sentAtMs, told503(deadAtMs - sentAtMs - 1_000));
        books.deadLetters.add(new Books.DeadLetter(MERCHANT, "tok_1", command.correlationId, EPOCH_AT_ZERO + deadAtMs));
    }

    /** The entrance's 503 temporarily_unavailable on the reply queue, heard {@code afterMs} after the send. */
    private static QueueAnswerAt told503(long afterMs) {
        return heard(503, "temporarily_unavailable", UNAVAILABLE, afterMs);
    }

    private record QueueAnswerAt(QueueAnswer answer, long afterMs) {
    }

    /**
     * An answer on the reply queue, heard {@code afterMs} after its command was sent, marked final as the service
     * marks it by its status.
     */
    private static QueueAnswerAt heard(int status, String code, String body, long afterMs) {
        boolean isFinal = !(status == 202 || status == 503 || "request_in_progress".equals(code));
        return marked(status, code, body, afterMs, isFinal);
    }

    /** An answer on the reply queue whose {@code final} header is {@code isFinal} (none when null). */
    private static QueueAnswerAt marked(int status, String code, String body, long afterMs, Boolean isFinal) {
        Map<String, Object> headers = new HashMap<>();
        headers.put("status", status);
        if (isFinal != null) {
            headers.put(QueueAnswer.FINAL, isFinal);
        }
        return new QueueAnswerAt(new QueueAnswer("corr", status, code, false, body, headers), afterMs);
    }

    private static Answer answer(int status, String body, long elapsedMs) {
        boolean retryable = status == 503 || IN_PROGRESS.equals(body);
        return new Answer(status, "application/json", body, null, retryable ? "1" : null, null, elapsedMs);
    }

    private static Answer noAnswer(String error, long elapsedMs) {
        return new Answer(0, null, null, null, null, error, elapsedMs);
    }

    /** The request's payment record, opened at {@code openedAtMs}, settled SUCCEEDED on the channel's charge. */
    private void paidAtTheChannel(long openedAtMs) {
        PaymentRow row = new PaymentRow(MERCHANT, "o1_r1", "o1", "tok_1", "SUCCEEDED", null, TXN,
                EPOCH_AT_ZERO + openedAtMs);
        books.paymentsByRequest.put(Books.key(MERCHANT, "o1_r1"), List.of(row));
        books.paymentsByOrder.put(Books.key(MERCHANT, "o1"), List.of(row));
        books.orders.put(Books.key(MERCHANT, "o1"), new Books.OrderRow(MERCHANT, "o1", "PAID", 2));
        books.channel.put(Books.key(MERCHANT, "o1_r1"), new ChannelCharge(200, "SUCCEEDED", null, TXN));
    }

    /** The request's payment record FAILED on the channel's decline, its order open again. */
    private void declinedAtTheChannel() {
        PaymentRow row = new PaymentRow(MERCHANT, "o1_r1", "o1", "tok_1", "FAILED", "DECLINED", null, EPOCH_AT_ZERO);
        books.paymentsByRequest.put(Books.key(MERCHANT, "o1_r1"), List.of(row));
        books.paymentsByOrder.put(Books.key(MERCHANT, "o1"), List.of(row));
        books.orders.put(Books.key(MERCHANT, "o1"), new Books.OrderRow(MERCHANT, "o1", "CREATED", 2));
        books.channel.put(Books.key(MERCHANT, "o1_r1"), new ChannelCharge(200, "DECLINED", null, null));
    }

    /** The request paid by a 200 PAID, its order charged once at the channel. */
    private void paid() {
        sent(direct(0), 500, answer(200, PAID, 40));
        paidAtTheChannel(/* opened at */ 510);
        books.ledgers.put(Books.key(MERCHANT, "o1"), new Ledger(1, 1));
    }

    private Refund refund(String refundNo, long amount) {
        return history.newRefund(MERCHANT, 0, "o1", refundNo, "tok_" + refundNo, amount);
    }

    private static void sent(Refund refund, long atMs, Answer answer) {
        refund.add(new Attempt(0, "gw0", -1, atMs, "traffic", false, answer, EPOCH_AT_ZERO + atMs + answer.elapsedMs()));
    }

    private static String refunded(String refundNo, long amount, String refundId) {
        return "{\"refund_no\":\"" + refundNo + "\",\"order_no\":\"o1\",\"amount\":" + amount
                + ",\"currency\":\"EUR\",\"status\":\"REFUNDED\",\"channel_refund_id\":\"" + refundId
                + "\",\"refunded_at\":\"2027-01-15T08:00:00Z\"}";
    }

    /** A refund record of order o1, and the channel's word on its number ({@code channelSays} null: not found). */
    private void refundRecord(String refundNo, long amount, String status, String failure, String refundId,
            String channelSays) {
        RefundRow row = new RefundRow(MERCHANT, refundNo, "o1", "tok_" + refundNo, amount, status, failure, refundId,
                EPOCH_AT_ZERO + 1_000);
        books.refundsByNumber.put(Books.key(MERCHANT, refundNo), List.of(row));
        books.refundsByOrder.computeIfAbsent(Books.key(MERCHANT, "o1"), k -> new ArrayList<>()).add(row);
        books.channelRefunds.put(Books.key(MERCHANT, refundNo), channelSays == null
                ? new ChannelRefund(404, null, "refund_not_found", null)
                : new ChannelRefund(200, channelSays, null, "SUCCEEDED".equals(channelSays) ? refundId : null));
    }

    /** Order o1 as it stands, and the channel's refund ledger of it. */
    private void order(String status, long refunded, long reserved, long ledgerRefunds, long ledgerRefunded) {
        books.orders.put(Books.key(MERCHANT, "o1"), new Books.OrderRow(MERCHANT, "o1", status, 3, 2_500, refunded,
                reserved));
        books.refundLedgers.put(Books.key(MERCHANT, "o1"), new RefundLedger(ledgerRefunds, ledgerRefunded,
                ledgerRefunds));
    }

    /** Order o1 as a GET /orders asked at {@code atMs} showed it. */
    private void seen(String status, long refunded, long atMs) {
        history.sawOrder(new OrderSeen(MERCHANT, "o1", atMs, atMs + 20, status, 3, refunded, "GET /orders"));
    }

    private static Answer replayed(int status, String body, long elapsedMs) {
        return new Answer(status, "application/json", body, "true", null, null, elapsedMs);
    }

    private void paused(int instance, long fromMs, long toMs) {
        Fault fault = new Fault(fromMs, Kind.OWNER_PAUSED, instance, null, toMs - fromMs, 500, 1);
        history.faultStarted(fault, fromMs).end(toMs);
    }
}
