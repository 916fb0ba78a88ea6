package io.payonce.payment;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.MeterRegistry;

/** Counters for the duplicates each layer stopped and the answers replayed. */
@ApplicationScoped
public class PayMetrics {

    /** The layer that stopped a duplicate. */
    public enum Layer {
        REDIS, TOKEN, UNIQUE_INDEX, STATE_MACHINE
    }

    private final MeterRegistry meters;

    PayMetrics(MeterRegistry meters) {
        this.meters = meters;
    }

    public void stopped(Layer layer) {
        meters.counter("payonce.duplicates.stopped", "layer", layer.name().toLowerCase()).increment();
    }

    /** An answer replayed to a duplicate, by where it was read from. */
    public void replayed(String source) {
        meters.counter("payonce.replays", "source", source).increment();
    }
}
