package io.payonce.redis;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.ledgerAttempts;
import static io.payonce.support.Fixtures.payAnswer;
import static io.payonce.support.Fixtures.pendingOrder;
import static io.payonce.support.Fixtures.sandboxNormal;
import static io.payonce.support.Fixtures.token;
import static io.payonce.support.Operations.awaitRedis;
import static io.payonce.support.Operations.replays;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;

import jakarta.inject.Inject;

import io.payonce.support.Answer;
import io.payonce.support.Operations.Readiness;
import io.payonce.support.RedisUnreachable;
import io.payonce.support.TestDatabase;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A service whose Redis is unreachable from the start keeps taking traffic and says so in readiness. */
@QuarkusTest
@TestProfile(RedisUnreachable.class)
class RedisUnreachableAtStartTest {

    private static final Duration HEALTH_BOUND = Duration.ofSeconds(10);

    @Inject
    TestDatabase db;

    @BeforeEach
    void setUp() {
        db.clean();
        sandboxNormal();
    }

    @Test
    void readiness_isUpWithRedisDegraded() {
        Readiness ready = awaitRedis("degraded", "polling", HEALTH_BOUND);

        assertAll(ready.toString(),
                () -> assertEquals(200, ready.httpStatus()),
                () -> assertEquals("UP", ready.status()));
    }

    @Test
    void duplicate_isReplayedFromMysql() {
        awaitRedis("degraded", null, HEALTH_BOUND);
        String orderNo = pendingOrder();
        String token = token();
        String requestNo = id("req");
        Answer first = payAnswer(token, orderNo, requestNo);
        double mysqlReplays = replays("mysql");

        Answer duplicate = payAnswer(token, orderNo, requestNo);

        assertAll(
                () -> assertEquals(200, first.status(), first.body()),
                () -> assertEquals(first.body(), duplicate.body()),
                () -> assertEquals("true", duplicate.replayed()),
                () -> assertEquals(mysqlReplays + 1, replays("mysql"), "replays from mysql"),
                () -> assertEquals(1, ledgerAttempts(MERCHANT, orderNo), "charge calls at the channel"));
    }
}
