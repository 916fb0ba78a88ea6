package io.payonce.api;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.OTHER_MERCHANT;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.pay;
import static io.payonce.support.Fixtures.payBody;
import static io.payonce.support.Fixtures.pendingOrder;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Fixtures;
import io.payonce.support.TestDatabase;
import io.quarkus.redis.datasource.RedisDataSource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/** The optional IETF/Stripe mode: client-generated Idempotency-Key values registered on first use. */
@QuarkusTest
@TestProfile(ClientKeysTest.ClientKeysOn.class)
class ClientKeysTest {

    public static class ClientKeysOn implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("payonce.idempotency.accept-client-keys", "true");
        }
    }

    @Inject
    TestDatabase db;

    @Inject
    RedisDataSource redis;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
    }

    @Test
    void unknownClientKey_isRegisteredOnFirstUse_andReplayed() {
        String orderNo = pendingOrder();
        String key = id("client-key");
        Map<String, Object> body = payBody(orderNo, id("req"), AMOUNT);

        String first = pay(MERCHANT, key, body).then().statusCode(200).extract().asString();
        String again = pay(MERCHANT, key, body).then().statusCode(200)
                .header("Idempotent-Replayed", "true").extract().asString();

        assertEquals(first, again);
        assertEquals("COMPLETED", db.tokenState(MERCHANT, key));
        assertEquals(1, Fixtures.ledgerCharges(MERCHANT, orderNo));
    }

    @Test
    void clientKey_isScopedToItsMerchant() {
        String key = id("shared-client-key");
        String orderOfA = pendingOrder(MERCHANT);
        String orderOfB = pendingOrder(OTHER_MERCHANT);
        String requestNo = id("req");

        pay(MERCHANT, key, payBody(orderOfA, requestNo, AMOUNT)).then().statusCode(200);
        pay(OTHER_MERCHANT, key, payBody(orderOfB, requestNo, AMOUNT)).then().statusCode(200)
                .header("Idempotent-Replayed", (String) null);
    }

    @Test
    void clientKeyReusedForAnotherRequest_returns422() {
        String orderNo = pendingOrder();
        String key = id("reused-client-key");
        pay(MERCHANT, key, payBody(orderNo, id("req"), AMOUNT)).then().statusCode(200);

        pay(MERCHANT, key, payBody(orderNo, id("req"), AMOUNT)).then().statusCode(422)
                .body("code", equalTo("idempotency_key_reused"));
    }

    @Test
    void tooShortClientKey_returns400InvalidToken_sayingWhatAKeyMayBe() {
        pay(MERCHANT, "short-key", payBody(pendingOrder(), id("req"), AMOUNT)).then().statusCode(400)
                .body("code", equalTo("invalid_idempotency_token"))
                .body("detail", containsString("POST /tokens"))
                .body("detail", containsString("client key of 16 to 255 printable ASCII characters"));
    }

    /**
     * MySQL's collations pad with spaces when they compare, so a key ending in a space would be the same
     * row as the key without it there, and another key in Redis: refused, the key means one thing.
     */
    @Test
    void keyEndingInASpace_isRefused_andTouchesNothing() {
        String orderNo = pendingOrder();
        String key = id("client-key");
        Map<String, Object> body = payBody(orderNo, id("req"), AMOUNT);

        pay(MERCHANT, key + " ", body).then().statusCode(400).body("code", equalTo("invalid_idempotency_token"));

        assertEquals(0, db.count("SELECT COUNT(*) FROM idempotency_tokens WHERE merchant_id = ?", MERCHANT));
        assertEquals("PENDING", Fixtures.orderStatus(MERCHANT, orderNo));
    }

    /**
     * A client key's row gets its expiry at first use; an answer cached by a later request (here the retry
     * after a refused charge released the key) must not live longer in Redis than the row it copies.
     */
    @Test
    void answerCachedByALaterRequest_neverOutlivesTheKeysRow() throws InterruptedException {
        String orderNo = pendingOrder();
        String key = id("client-key");
        Map<String, Object> body = payBody(orderNo, id("req"), AMOUNT);
        Fixtures.sandbox("fail_before_accept", 0, 1);
        pay(MERCHANT, key, body).then().statusCode(503);
        // the later request comes well after the row's expiry was set: a cache counted from it would outlive the row
        Thread.sleep(1_500);

        pay(MERCHANT, key, body).then().statusCode(200);

        long cacheEndsMs = System.currentTimeMillis() + redis.key().pttl("po:{" + MERCHANT + ":" + key + "}:res");
        long rowEndsMs = db.count("SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', expires_at) DIV 1000"
                + " FROM idempotency_tokens WHERE merchant_id = ? AND token = ?", MERCHANT, key);
        assertTrue(cacheEndsMs <= rowEndsMs + 250, "the cached answer ends " + (cacheEndsMs - rowEndsMs)
                + " ms after the row");
    }
}
