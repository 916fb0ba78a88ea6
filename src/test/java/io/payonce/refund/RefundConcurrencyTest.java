package io.payonce.refund;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Refunds.ledger;
import static io.payonce.support.Refunds.order;
import static io.payonce.support.Refunds.paidOrder;
import static io.payonce.support.Refunds.refundAnswer;
import static io.payonce.support.Refunds.refundOf;
import static io.payonce.support.Refunds.sandboxRefunds;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Answer;
import io.payonce.support.Concurrently;
import io.payonce.support.Fixtures;
import io.payonce.support.Refunds.RefundLedger;
import io.payonce.support.Refunds.RefundRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;

/** Refunds arriving at once: copies of one refund, and different refunds racing for one order's amount. */
@QuarkusTest
class RefundConcurrencyTest {

    private static final int COPIES = 20;
    private static final int RACERS = 10;
    private static final Duration BOUND = Duration.ofSeconds(40);
    /** Slow enough that every copy arrives while the first execution is at the channel. */
    private static final long SLOW_REFUND_MS = 300;

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
        sandboxRefunds("ok", 0, 0);
    }

    @Test
    void stormOfIdenticalRefunds_refundsOnceAtTheChannel_andEveryCopyGetsTheSameAnswer() {
        String orderNo = paidOrder();
        RefundRequest r = refundOf(orderNo, 900);
        sandboxRefunds("ok", SLOW_REFUND_MS, 1);

        List<Answer> copies = Concurrently.all(COPIES, BOUND, (group, copy) -> refundAnswer(r));

        Answer first = copies.get(0);
        assertAll(
                () -> assertEquals(1, copies.stream().map(Answer::status).distinct().count(), copies.toString()),
                () -> assertEquals(1, copies.stream().map(Answer::body).distinct().count(), copies.toString()),
                () -> assertEquals(200, first.status(), first.toString()),
                () -> assertEquals(COPIES - 1, copies.stream().filter(Answer::isReplay).count(), "replays"),
                () -> assertEquals(new RefundLedger(1, 900, 1), ledger(orderNo), "one refund call, one refund"),
                () -> assertEquals(900, order(orderNo).getLong("refunded_amount")),
                () -> assertEquals(1, order(orderNo).getList("refunds").size(), "refund records"));
    }

    /**
     * Ten different refunds of 30 % each of one charge, at once: three fit, the amount alone refuses the
     * others, and no refund that fits is refused for racing.
     */
    @Test
    void tenRefundsOfThirtyPercentRacing_exactlyThreeSucceed_theOthers422() {
        String orderNo = paidOrder();
        long part = AMOUNT * 30 / 100;
        List<RefundRequest> racers = IntStream.range(0, RACERS).mapToObj(i -> refundOf(orderNo, part)).toList();
        sandboxRefunds("ok", 100, RACERS);

        List<Answer> answers = Concurrently.all(RACERS, BOUND, (group, i) -> refundAnswer(racers.get(i)));

        Map<String, Long> byOutcome = answers.stream()
                .collect(Collectors.groupingBy(a -> a.status() + " " + (a.code() == null ? "" : a.code()),
                        Collectors.counting()));
        RefundLedger atChannel = ledger(orderNo);
        JsonPath o = order(orderNo);
        assertAll(
                () -> assertEquals(Map.of("200 ", 3L, "422 refund_exceeds_payment", 7L), byOutcome, answers.toString()),
                () -> assertEquals(new RefundLedger(3, 3 * part, 3), atChannel),
                () -> assertTrue(atChannel.refundedAmount() <= AMOUNT, "the channel refunded at most the charge"),
                () -> assertEquals(3 * part, o.getLong("refunded_amount")),
                () -> assertEquals("PARTIALLY_REFUNDED", o.getString("status")),
                () -> assertEquals(3, o.getList("refunds").size(), "only the refunds that fit have records"));
    }
}
