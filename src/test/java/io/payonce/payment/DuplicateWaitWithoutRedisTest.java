package io.payonce.payment;

import io.payonce.support.RedisUnreachable;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;

/**
 * {@link DuplicateWaitTest} again with Redis unreachable from the start: duplicates wait by polling
 * MySQL and get the same answers.
 */
@QuarkusTest
@TestProfile(RedisUnreachable.class)
class DuplicateWaitWithoutRedisTest extends DuplicateWaitTest {
}
