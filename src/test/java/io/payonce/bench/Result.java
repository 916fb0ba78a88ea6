package io.payonce.bench;

import java.util.List;

import org.HdrHistogram.Histogram;

import io.vertx.core.json.JsonObject;

/**
 * One measured scenario: its summary (the machine-readable BENCH line, which the report's table and
 * targets read too), its latency distribution in microseconds, its correctness checks, and the
 * distribution the plot shows (the latency, except where another tells more).
 */
record Result(String label, JsonObject summary, Histogram latency, List<String> checks, CpuMeter.Usage cpu,
        Histogram plotted) {

    /** A result whose plotted distribution is its latency. */
    Result(String label, JsonObject summary, Histogram latency, List<String> checks, CpuMeter.Usage cpu) {
        this(label, summary, latency, checks, cpu, latency);
    }

    /** Throughput and latency figures of a loop, in the units the report uses (per second, ms). */
    static JsonObject figures(JsonObject summary, ClosedLoop.Run run) {
        return latency(summary.put("n", run.started()).put("completed", run.completed())
                .put("wrong", run.wrong()).put("errors", run.failed())
                .put("tput", round(run.perSecond(), 1)), run.latency());
    }

    static JsonObject latency(JsonObject summary, Histogram h) {
        return summary.put("p50_ms", ms(h.getValueAtPercentile(50)))
                .put("p90_ms", ms(h.getValueAtPercentile(90)))
                .put("p99_ms", ms(h.getValueAtPercentile(99)))
                .put("max_ms", ms(h.getMaxValue()));
    }

    static double ms(long micros) {
        return round(micros / 1000.0, 3);
    }

    static double round(double value, int decimals) {
        double scale = Math.pow(10, decimals);
        return Math.round(value * scale) / scale;
    }

    double number(String key) {
        Object value = summary.getValue(key);
        return value instanceof Number n ? n.doubleValue() : Double.NaN;
    }
}
