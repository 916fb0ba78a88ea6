package io.payonce.channel;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.CURRENCY;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.pay;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.token;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * The channel call on the wire, against a provider on loopback that records what it is sent and answers by
 * the request number's prefix: the charge's method, path, headers and body members as the channel's API has
 * them, and answers that only look like the channel's word (a member given twice, something after the
 * object, a state that is not a string) settling nothing, while members the service does not read, nested
 * anywhere, are skipped.
 */
@QuarkusTest
@TestProfile(ChannelWireTest.RecordingProvider.class)
class ChannelWireTest {

    /**
     * What the provider was sent as a charge ({@code POST /v1/charges}, the only call recorded), by request
     * number: the headers of interest and the body.
     */
    record Sent(String merchant, String contentType, String accept, String body) {
    }

    public static class RecordingProvider implements QuarkusTestProfile {
        static final Map<String, Sent> SENT = new ConcurrentHashMap<>();
        private static final int PORT = LoopbackProvider.serve("/v1/charges", (exchange, requestNo, body) -> {
            if (exchange.getRequestMethod().equals("POST") && exchange.getRequestURI().getRawPath().equals("/v1/charges")) {
                SENT.put(requestNo, new Sent(exchange.getRequestHeaders().getFirst("X-Merchant-Id"),
                        exchange.getRequestHeaders().getFirst("Content-Type"),
                        exchange.getRequestHeaders().getFirst("Accept"), body));
            }
            return answerFor(requestNo);
        });

        @Override
        public Map<String, String> getConfigOverrides() {
            // a base path of the provider's own, which every call's path goes under
            return Map.of("payonce.channel.url", "http://127.0.0.1:" + PORT + "/v1/");
        }

        private static String answerFor(String requestNo) {
            String prefix = requestNo.substring(0, requestNo.indexOf('_'));
            return switch (prefix) {
                case "twice" -> "{\"txn_id\":\"t-1\",\"status\":\"SUCCEEDED\",\"status\":\"SUCCEEDED\"}";
                case "trailing" -> "{\"txn_id\":\"t-1\",\"status\":\"SUCCEEDED\"} {}";
                case "number" -> "{\"txn_id\":\"t-1\",\"status\":1}";
                case "nested" -> "{\"meta\":{\"status\":\"DECLINED\",\"code\":\"charge_not_found\",\"list\":[1,"
                        + "{\"txn_id\":\"t-inner\"}]},\"request_no\":\"" + requestNo + "\",\"txn_id\":\"t-outer\","
                        + "\"extra\":[true,null,2.5],\"status\":\"SUCCEEDED\"}";
                default -> "{\"txn_id\":\"t-" + requestNo + "\",\"request_no\":\"" + requestNo
                        + "\",\"status\":\"SUCCEEDED\"}";
            };
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
    }

    @Test
    void aCharge_isThePostOfItsFiveMembers_withTheMerchantHeader() throws IOException {
        String orderNo = pendingOrder();
        String requestNo = id("plain");

        pay(token(), orderNo, requestNo).then().statusCode(200)
                .body("status", equalTo("PAID"))
                .body("channel_txn_id", equalTo("t-" + requestNo));

        Sent sent = RecordingProvider.SENT.get(requestNo);
        assertNotNull(sent, "the provider was sent the charge under its request number");
        assertEquals(MERCHANT, sent.merchant());
        assertEquals("application/json", sent.contentType());
        assertEquals("application/json", sent.accept());
        JsonNode body = JSON.readTree(sent.body());
        assertEquals(Map.of("merchant_id", MERCHANT, "order_no", orderNo, "request_no", requestNo,
                "amount", String.valueOf(AMOUNT), "currency", CURRENCY), members(body), sent.body());
        assertEquals(true, body.get("amount").isIntegralNumber(), sent.body());
    }

    @Test
    void membersTheServiceDoesNotRead_areSkipped_whereverTheyAre() {
        String requestNo = id("nested");

        pay(token(), pendingOrder(), requestNo).then().statusCode(200)
                .body("status", equalTo("PAID"))
                .body("channel_txn_id", equalTo("t-outer"));
    }

    @Test
    void aStateGivenTwice_settlesNothing() {
        assertUnsettled(id("twice"));
    }

    @Test
    void somethingAfterTheObject_settlesNothing() {
        assertUnsettled(id("trailing"));
    }

    @Test
    void aStateThatIsNotAString_settlesNothing() {
        assertUnsettled(id("number"));
    }

    private void assertUnsettled(String requestNo) {
        String orderNo = pendingOrder();

        pay(token(), orderNo, requestNo).then().statusCode(202).body("status", equalTo("PROCESSING"));

        as(MERCHANT).get("/payments/" + requestNo).then().body("status", equalTo("PROCESSING"));
    }

    private static Map<String, String> members(JsonNode body) {
        Map<String, String> members = new HashMap<>();
        body.properties().forEach(member -> members.put(member.getKey(), member.getValue().asText()));
        return members;
    }
}
