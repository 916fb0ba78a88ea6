package io.payonce.support;

import java.util.Map;

import io.quarkus.test.junit.QuarkusTestProfile;

/**
 * Redis configured but unreachable from the start (nothing listens on port 1): every Redis call fails,
 * so every request takes the MySQL path and duplicates wait by polling. Outcomes must be the same.
 */
public class RedisUnreachable implements QuarkusTestProfile {

    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of("quarkus.redis.hosts", "redis://127.0.0.1:1");
    }
}
