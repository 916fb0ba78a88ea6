package io.payonce.channel;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.orderStatus;
import static io.payonce.support.Fixtures.pay;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.token;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * A provider's transaction id is the provider's to choose: one longer than the 64 characters first
 * allowed, or one that is not printable ASCII, must not keep a charged payment from settling. The channel
 * here is a provider on loopback that charges every request and names it with such ids.
 */
@QuarkusTest
@TestProfile(ChannelTxnIdTest.OddIdsProvider.class)
class ChannelTxnIdTest {

    /** Charges everything; the id depends on the request number's prefix: {@code wide}, {@code long}, {@code odd}. */
    public static class OddIdsProvider implements QuarkusTestProfile {
        private static final int PORT = LoopbackProvider.serve("/charges", (exchange, requestNo, body) ->
                "{\"txn_id\":\"" + txnIdFor(requestNo) + "\",\"request_no\":\"" + requestNo
                        + "\",\"status\":\"SUCCEEDED\"}");

        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("payonce.channel.url", "http://127.0.0.1:" + PORT);
        }

        static String txnIdFor(String requestNo) {
            if (requestNo.startsWith("wide")) {
                return "w".repeat(255);
            }
            if (requestNo.startsWith("long")) {
                return "l".repeat(256);
            }
            return "odd id \\u00e9";
        }
    }

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
    }

    @Test
    void idOfTheFullWidth_isKeptWhole() {
        String orderNo = pendingOrder();
        String requestNo = id("wide");

        pay(token(), orderNo, requestNo).then().statusCode(200)
                .body("status", equalTo("PAID"))
                .body("channel_txn_id", equalTo("w".repeat(255)));

        as(MERCHANT).get("/payments/" + requestNo).then().body("channel_txn_id", equalTo("w".repeat(255)));
    }

    @Test
    void idTooLongToKeep_isDropped_andThePaymentStillSettles() {
        assertSettledWithoutId(id("long"));
    }

    @Test
    void idThatIsNotPrintableAscii_isDropped_andThePaymentStillSettles() {
        assertSettledWithoutId(id("odd"));
    }

    private void assertSettledWithoutId(String requestNo) {
        String orderNo = pendingOrder();

        pay(token(), orderNo, requestNo).then().statusCode(200)
                .body("status", equalTo("PAID"))
                .body("channel_txn_id", nullValue());

        assertEquals("PAID", orderStatus(MERCHANT, orderNo));
        as(MERCHANT).get("/payments/" + requestNo).then().body("status", equalTo("SUCCEEDED"));
    }
}
