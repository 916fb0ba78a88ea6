package io.payonce.payment;

import io.payonce.support.RedisUnreachable;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;

/** {@link ConcurrentDuplicatesTest} again with Redis unreachable from the start: the same outcomes. */
@QuarkusTest
@TestProfile(RedisUnreachable.class)
class ConcurrentDuplicatesWithoutRedisTest extends ConcurrentDuplicatesTest {
}
