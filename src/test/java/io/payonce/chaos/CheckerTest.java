package io.payonce.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import io.payonce.chaos.Books.PaymentRow;
import io.payonce.chaos.FaultSchedule.Fault;
import io.payonce.chaos.FaultSchedule.Kind;
import io.payonce.chaos.History.Attempt;
import io.payonce.chaos.History.Request;
import io.payonce.support.Answer;
import io.payonce.support.PayClient.ChannelCharge;
import io.payonce.support.PayRequest;

/**
 * What the checker accepts of a paused owner and of a 503, on histories written by hand: each test gives the
 * copies a client sent, with their answers and times, and the rows and the channel's word behind them.
 */
class CheckerTest {

    private static final String MERCHANT = "m_test";
    private static final String TXN = "txn_1";
    private static final String PAID = "{\"order_no\":\"o1\",\"request_no\":\"o1_r1\",\"status\":\"PAID\",\"channel_txn_id\":\""
            + TXN + "\"}";
    private static final String UNAVAILABLE = "{\"code\":\"temporarily_unavailable\"}";
    /** The wall clock's reading at run time 0 in these histories. */
    private static final long EPOCH_AT_ZERO = 1_800_000_000_000L;

    private final ChaosSettings settings = new ChaosSettings(Duration.ofSeconds(60), 1, 2, 1, 1, Duration.ofSeconds(1),
            "127.0.0.1", 3306, "unused", "root", "");
    private final History history = new History();
    private final Books books = new Books();
    private final Request request = history.newRequest(MERCHANT, 0, new PayRequest("o1", "o1_r1", "tok_1", 1999));

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

    private static Answer answer(int status, String body, long elapsedMs) {
        return new Answer(status, "application/json", body, null, status == 503 ? "1" : null, null, elapsedMs);
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

    private void paused(int instance, long fromMs, long toMs) {
        Fault fault = new Fault(fromMs, Kind.OWNER_PAUSED, instance, null, toMs - fromMs, 500, 1);
        history.faultStarted(fault, fromMs).end(toMs);
    }
}
