package io.payonce.observability;

import java.time.Duration;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;

/**
 * The latencies an operator asks percentiles of (p50, p95, p99 over any window and any number of instances,
 * with Prometheus' {@code histogram_quantile}): each timer publishes Micrometer's percentile-histogram
 * buckets. From 1 ms (a replay from Redis) to 30 s (past the owner's bound): 68 buckets a series.
 */
public final class LatencyHistograms {

    private static final Duration LOWEST = Duration.ofMillis(1);
    private static final Duration HIGHEST = Duration.ofSeconds(30);

    /** For a meter filter's {@code configure}, merged into what the meter had. */
    static final DistributionStatisticConfig CONFIG = DistributionStatisticConfig.builder()
            .percentilesHistogram(true)
            .minimumExpectedValue((double) LOWEST.toNanos())
            .maximumExpectedValue((double) HIGHEST.toNanos())
            .build();

    private LatencyHistograms() {
    }

    /** A timer of ours with the buckets. */
    public static Timer.Builder timer(String name) {
        return Timer.builder(name).publishPercentileHistogram().minimumExpectedValue(LOWEST).maximumExpectedValue(HIGHEST);
    }
}
