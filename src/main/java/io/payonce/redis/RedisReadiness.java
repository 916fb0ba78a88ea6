package io.payonce.redis;

import jakarta.enterprise.context.ApplicationScoped;

import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Reports the Redis fast path without ever failing readiness: without Redis the service is correct,
 * only slower, so it must keep taking traffic. {@code redis} is {@code up}, {@code degraded} or
 * {@code disabled}; it turns back to {@code up} by itself once Redis answers the probe again.
 */
@Readiness
@ApplicationScoped
public class RedisReadiness implements HealthCheck {

    private final RedisFastPath redis;
    private final WakeUps wakeUps;

    RedisReadiness(RedisFastPath redis, WakeUps wakeUps) {
        this.redis = redis;
        this.wakeUps = wakeUps;
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named("Redis fast path")
                .up()
                .withData("redis", redis.enabled() ? (redis.available() ? "up" : "degraded") : "disabled")
                .withData("wake_ups", wakeUps.listening() ? "pubsub" : "polling")
                .build();
    }
}
