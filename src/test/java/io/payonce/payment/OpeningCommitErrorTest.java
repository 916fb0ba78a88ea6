package io.payonce.payment;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.ledgerAttempts;
import static io.payonce.support.Fixtures.ledgerCharges;
import static io.payonce.support.Fixtures.orderStatus;
import static io.payonce.support.Fixtures.payAnswer;
import static io.payonce.support.Fixtures.payRequest;
import static io.payonce.support.Fixtures.sandboxNormal;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;

import jakarta.inject.Inject;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Answer;
import io.payonce.support.BehindMysqlProxy;
import io.payonce.support.MysqlProxy;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;

/**
 * A pay request whose opening COMMIT the server committed while the service was told an error (here
 * {@code ER_ERROR_DURING_COMMIT}, 1180): the payment record, the order's move to PAYING and the token's claim
 * stand, so "nothing was charged, retry" (503) would be an answer that a later charge under the same request
 * could contradict. The COMMIT is in doubt, resolved, and the request goes on to its charge.
 */
@QuarkusTest
@TestProfile(BehindMysqlProxy.class)
class OpeningCommitErrorTest {

    private static final Duration BOUND = Duration.ofSeconds(10);

    @Inject
    TestDatabase db;

    @BeforeEach
    void setUp() {
        db.clean();
        sandboxNormal();
    }

    @AfterEach
    void disarm() {
        BehindMysqlProxy.proxy().disarm();
    }

    @Test
    void openingCommitAnsweredWithAnErrorThatCommitted_isNot503_andChargesOnce() {
        // given: a payment whose opening COMMIT will commit while the service is told 1180
        PayRequest request = payRequest();
        MysqlProxy.Forgery forgery = BehindMysqlProxy.proxy().forgeNextCommitAnswer(1180, "HY000",
                "Got error 1 \"Operation not permitted\" during COMMIT");

        // when: it is paid, and the same request sent again
        Answer first = payAnswer(request);
        String serverAnswer = forgery.awaitServerAnswer(BOUND);
        Answer again = payAnswer(request);

        // then: the opening was resolved as committed and charged once; every final answer says so
        assertAll("first " + first + "; again " + again + "; lost track: " + BehindMysqlProxy.proxy().lostTrack(),
                () -> assertEquals("OK", serverAnswer, "the server committed the opening"),
                () -> assertEquals(200, first.status(), "paid, not 503 nor 202: the COMMIT was resolved"),
                () -> assertEquals(1, ledgerCharges(MERCHANT, request.orderNo()), "charged once"),
                () -> assertEquals(1, ledgerAttempts(MERCHANT, request.orderNo()), "one charge call"),
                () -> assertEquals("PAID", orderStatus(MERCHANT, request.orderNo())),
                () -> assertEquals(1, db.payments(MERCHANT, request.orderNo())),
                () -> assertTrue(again.isReplay(), "replayed"),
                () -> assertEquals(first.body(), again.body(), "byte for byte"),
                () -> assertEquals(List.of(), BehindMysqlProxy.proxy().lostTrack()));
    }
}
