package io.payonce.api;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.pay;
import static io.payonce.support.Fixtures.payBody;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.token;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Map;

import jakarta.inject.Inject;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.Fixtures;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;

/**
 * Replays answered from the Redis cache ahead of the REST layer ({@link ReplayRoute}) look exactly like
 * the REST layer's own replays, and anything the route is not sure of still gets the REST layer's answer.
 */
@QuarkusTest
class ReplayRouteTest {

    @Inject
    TestDatabase db;

    @BeforeEach
    void clean() {
        db.clean();
        Fixtures.sandboxNormal();
    }

    @Test
    void replayFromTheRoute_isTheRestLayersReplay_byteForByte() {
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        Response first = pay(token, orderNo, requestNo);

        Response viaRoute = pay(token, orderNo, requestNo);
        // a token in the body too sends the copy past the route, to the REST layer
        Map<String, Object> withBodyToken = payBody(orderNo, requestNo, AMOUNT);
        withBodyToken.put("token", token);
        Response viaRest = pay(MERCHANT, token, withBodyToken);

        assertAll(
                () -> assertEquals(200, first.statusCode()),
                () -> assertNull(first.header("Idempotent-Replayed")),
                () -> assertSameReplay(first, viaRoute),
                () -> assertSameReplay(first, viaRest));
    }

    @Test
    void copyOfTheFirstBytes_isReplayedByTheirDigest_withoutBeingParsed() {
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        String body = "{\"order_no\":\"" + orderNo + "\",\"request_no\":\"" + requestNo + "\",\"amount\":" + AMOUNT + "}";
        Response first = as(MERCHANT).header("Idempotency-Key", token).body(body).post("/pay");
        // the cached fingerprint made another request's: only a copy that is not compared by it can still match
        String cacheKey = "po:{" + MERCHANT + ":" + token + "}:res";
        String[] cached = db.redisGet(cacheKey).split("\\|", 3);
        db.redisSet(cacheKey, cached[0] + "|" + "0".repeat(64) + "|" + cached[2]);

        Response sameBytes = as(MERCHANT).header("Idempotency-Key", token).body(body).post("/pay");
        Response otherBytes = as(MERCHANT).header("Idempotency-Key", token).body(" " + body).post("/pay");

        assertAll(
                () -> assertEquals(200, first.statusCode(), first.asString()),
                () -> assertSameReplay(first, sameBytes),
                () -> assertEquals(422, otherBytes.statusCode(), otherBytes.asString()));
    }

    @Test
    void sameRequestInOtherBytes_isReplayedByItsFingerprint() {
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        Response first = as(MERCHANT).header("Idempotency-Key", token).body("{\"order_no\":\"" + orderNo
                + "\",\"request_no\":\"" + requestNo + "\",\"amount\":" + AMOUNT + "}").post("/pay");

        Response reordered = as(MERCHANT).header("Idempotency-Key", token).body("{ \"amount\": " + AMOUNT
                + ", \"request_no\": \"" + requestNo + "\", \"order_no\": \"" + orderNo + "\" }").post("/pay");

        assertEquals(200, first.statusCode(), first.asString());
        assertSameReplay(first, reordered);
    }

    @Test
    void declinedAnswer_isReplayedAsProblemJson() {
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        Fixtures.sandbox("decline", 0, 1);
        Response first = pay(token, orderNo, requestNo);

        Response replay = pay(token, orderNo, requestNo);

        assertEquals(402, first.statusCode(), first.asString());
        assertSameReplay(first, replay);
    }

    @Test
    void otherRequestOnACachedToken_isRefused_notReplayed() {
        String orderNo = pendingOrder();
        String token = token();
        pay(token, orderNo, id("req")).then().statusCode(200);

        pay(token, orderNo, id("other")).then().statusCode(422)
                .header("Idempotent-Replayed", (String) null);
    }

    @Test
    void badBodyOnACachedToken_isA400_notAReplay() {
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        pay(token, orderNo, requestNo).then().statusCode(200);

        as(MERCHANT).header("Idempotency-Key", token)
                .body("{\"order_no\":\"" + orderNo + "\",\"request_no\":\"" + requestNo + "\",\"amount\":\"1999\"}")
                .post("/pay").then().statusCode(400).contentType("application/problem+json")
                .header("Idempotent-Replayed", (String) null);
    }

    @Test
    void emptyCurrencyOnACachedToken_isA400_asTheRestLayerSays() {
        // the fingerprint's canonical form reads a missing currency and an empty one alike, so the cached
        // answer's fingerprint matches: only the REST layer's field rules tell the two apart
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        pay(token, orderNo, requestNo).then().statusCode(200);

        as(MERCHANT).header("Idempotency-Key", token)
                .body("{\"order_no\":\"" + orderNo + "\",\"request_no\":\"" + requestNo + "\",\"amount\":1999,"
                        + "\"currency\":\"\"}")
                .post("/pay").then().statusCode(400).contentType("application/problem+json")
                .header("Idempotent-Replayed", (String) null);
    }

    @Test
    void cachedTokenOfAnotherMerchant_isInvalid() {
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        pay(token, orderNo, requestNo).then().statusCode(200);

        pay(Fixtures.OTHER_MERCHANT, token, payBody(orderNo, requestNo, AMOUNT)).then().statusCode(400)
                .header("Idempotent-Replayed", (String) null);
    }

    private static void assertSameReplay(Response first, Response replay) {
        assertEquals(first.statusCode(), replay.statusCode());
        assertEquals(first.contentType(), replay.contentType());
        assertEquals(first.asString(), replay.asString());
        assertEquals("true", replay.header("Idempotent-Replayed"));
    }
}
