package io.payonce.payment;

import jakarta.inject.Singleton;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.redis.RedisFastPath;
import io.quarkus.runtime.Startup;

/**
 * Whether the pay path's first layer is off because Redis failed its probe, as readiness reports it
 * ({@code redis: degraded}), so that an operator is told when it lasts: payments stay correct on the
 * MySQL path alone, only slower. Created at start, so the gauge is there before the first request.
 */
@Startup
@Singleton
public class FastPathGauge {

    FastPathGauge(RedisFastPath redis, MeterRegistry meters) {
        Gauge.builder("payonce.redis.degraded", redis, r -> r.enabled() && !r.available() ? 1 : 0)
                .description("1 while Redis is enabled and failed its last probe (the MySQL path serves alone), else 0")
                .strongReference(true).register(meters);
    }
}
