package io.payonce.payment;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.ledgerAttempts;
import static io.payonce.support.Fixtures.ledgerCharges;
import static io.payonce.support.Fixtures.orderStatus;
import static io.payonce.support.Fixtures.payAnswer;
import static io.payonce.support.Fixtures.payRequest;
import static io.payonce.support.Fixtures.sandbox;
import static io.payonce.support.Fixtures.sandboxNormal;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import io.payonce.support.Answer;
import io.payonce.support.Concurrently;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;

/**
 * Many identical copies of one pay request (same token, same body) arriving at once, for many orders at
 * once: one business effect per order, and one answer shared by every copy.
 */
@QuarkusTest
class ConcurrentDuplicatesTest {

    private static final int ORDERS = 10;
    private static final int COPIES = 20;
    private static final int THREADS = 64;
    private static final Duration BOUND = Duration.ofSeconds(30);
    /** Slow enough that every copy of an order arrives while its first execution is at the channel. */
    private static final long SLOW_CHANNEL_MS = 150;

    @Inject
    TestDatabase db;

    @BeforeEach
    void setUp() {
        db.clean();
        sandboxNormal();
    }

    @Test
    void simultaneousCopies_getOneIdenticalAnswerAndOneCharge() {
        List<PayRequest> requests = requests();

        List<List<Answer>> answers = sendAllCopiesAtOnce(requests);

        assertAll(IntStream.range(0, ORDERS).mapToObj(i -> oneAnswerOneEffect(requests.get(i), answers.get(i))));
    }

    @Test
    void copiesOverlappingASlowCharge_waitAndReceiveTheFirstAnswerAsReplay() {
        List<PayRequest> requests = requests();
        sandbox("ok", SLOW_CHANNEL_MS, ORDERS);

        List<List<Answer>> answers = sendAllCopiesAtOnce(requests);

        List<Executable> checks = new ArrayList<>();
        for (int i = 0; i < ORDERS; i++) {
            List<Answer> copies = answers.get(i);
            checks.add(oneAnswerOneEffect(requests.get(i), copies));
            checks.add(() -> assertEquals(COPIES - 1, copies.stream().filter(Answer::isReplay).count(),
                    "copies answered with Idempotent-Replayed: true"));
        }
        assertAll(checks);
    }

    private static List<PayRequest> requests() {
        return IntStream.range(0, ORDERS).mapToObj(i -> payRequest()).toList();
    }

    private static List<List<Answer>> sendAllCopiesAtOnce(List<PayRequest> requests) {
        return Concurrently.bursts(ORDERS, COPIES, THREADS, BOUND, (order, copy) -> payAnswer(requests.get(order)));
    }

    private Executable oneAnswerOneEffect(PayRequest request, List<Answer> copies) {
        return () -> {
            Answer first = copies.get(0);
            assertAll(request.orderNo(),
                    () -> assertEquals(1, distinct(copies, Answer::status).size(), "distinct status codes"),
                    () -> assertEquals(1, distinct(copies, Answer::body).size(), "distinct bodies"),
                    () -> assertEquals(200, first.status(), first.body()),
                    () -> assertEquals("PAID", JsonPath.from(first.body()).getString("status"), first.body()),
                    () -> assertEquals(1, db.payments(MERCHANT, request.orderNo()), "payment records"),
                    () -> assertEquals(1, ledgerCharges(MERCHANT, request.orderNo()), "charges at the channel"),
                    () -> assertEquals(1, ledgerAttempts(MERCHANT, request.orderNo()), "charge calls at the channel"),
                    () -> assertEquals("PAID", orderStatus(MERCHANT, request.orderNo()), "order status"));
        };
    }

    private static <T> List<T> distinct(List<Answer> copies, Function<Answer, T> part) {
        return copies.stream().map(part).distinct().collect(Collectors.toList());
    }
}
