package io.payonce.reconcile;

import static io.payonce.support.Operations.metric;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;

/** The gauges of PROCESSING payments an alert pages on; measured by hand (the test profile runs jobs hourly). */
@QuarkusTest
class ProcessingBacklogTest {

    private static final Duration RUN = Duration.ofSeconds(20);
    /** Within give-up-after (an hour in the test profile's defaults). */
    private static final Duration WITHIN_GIVE_UP = Duration.ofMinutes(1);
    private static final Duration PAST_GIVE_UP = Duration.ofHours(2);
    private static final Duration LEASE_OVER = Duration.ofSeconds(-1);

    @Inject
    TestDatabase db;

    @Inject
    ProcessingBacklog backlog;

    @BeforeEach
    void clean() {
        db.clean();
    }

    @Test
    void paymentPastGiveUpAfter_isOverdue_andTheOldest() {
        db.paymentProcessing(WITHIN_GIVE_UP, LEASE_OVER);
        db.paymentProcessing(PAST_GIVE_UP, LEASE_OVER);

        backlog.measure().await().atMost(RUN);

        double oldest = metric("payonce_payments_processing_oldest_seconds{kind=\"charge\"}");
        assertAll(
                () -> assertEquals(2, metric("payonce_payments_processing{kind=\"charge\"}")),
                () -> assertEquals(1, metric("payonce_payments_processing_overdue{kind=\"charge\"}")),
                () -> assertTrue(oldest >= PAST_GIVE_UP.toSeconds() && oldest < PAST_GIVE_UP.toSeconds() + 60,
                        "oldest " + oldest + " s"));
    }

    @Test
    void noPaymentProcessingAnyMore_gaugesReadZero() {
        db.paymentProcessing(PAST_GIVE_UP, LEASE_OVER);
        backlog.measure().await().atMost(RUN);
        db.clean();

        backlog.measure().await().atMost(RUN);

        assertAll(
                () -> assertEquals(0, metric("payonce_payments_processing{kind=\"charge\"}")),
                () -> assertEquals(0, metric("payonce_payments_processing_overdue{kind=\"charge\"}")),
                () -> assertEquals(0, metric("payonce_payments_processing_oldest_seconds{kind=\"charge\"}")));
    }
}
