package io.payonce.reconcile;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * While the channel gives no clear answer (here it cannot be reached at all), an uncertain payment stays
 * PROCESSING and is retried with backoff.
 */
@QuarkusTest
@TestProfile(ReconcilerChannelDownTest.ChannelDown.class)
class ReconcilerChannelDownTest {

    public static class ChannelDown implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            // nothing listens on port 1: every channel call fails to connect
            return Map.of("payonce.channel.url", "http://127.0.0.1:1/sandbox");
        }
    }

    @Inject
    TestDatabase db;

    @Inject
    Reconciler reconciler;

    @BeforeEach
    void clean() {
        db.clean();
    }

    @Test
    void noClearAnswer_paymentStaysProcessing_retriedOnlyAfterBackoff() {
        PayRequest left = db.paymentProcessingWithoutToken(Duration.ofMinutes(1));
        String orderNo = left.orderNo();
        String requestNo = left.requestNo();

        Reconciler.Report first = reconciler.runOnce().await().atMost(Duration.ofSeconds(20));
        Reconciler.Report second = reconciler.runOnce().await().atMost(Duration.ofSeconds(20));

        assertEquals(1, first.postponed());
        assertEquals(0, first.settled());
        assertEquals(0, second.postponed() + second.settled(), "not retried before its backoff");
        assertEquals(1, db.count("SELECT COUNT(*) FROM payments WHERE request_no = ? AND status = 'PROCESSING'"
                + " AND reconcile_attempts = 1 AND reconcile_after > UTC_TIMESTAMP(3)", requestNo));
        assertEquals(1, db.count("SELECT COUNT(*) FROM orders WHERE order_no = ? AND status = 'PAYING'", orderNo));
    }
}
