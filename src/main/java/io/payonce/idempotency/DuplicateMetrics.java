package io.payonce.idempotency;

import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.inject.Singleton;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * Counters for the duplicates each layer stopped and the answers replayed. Each counter is looked up
 * once: a registry lookup builds and sorts the meter's tags, on every replay otherwise.
 */
@Singleton
public class DuplicateMetrics {

    /** The layer that stopped a duplicate. */
    public enum Layer {
        REDIS, TOKEN, UNIQUE_INDEX, STATE_MACHINE
    }

    private final MeterRegistry meters;
    private final Map<Layer, Counter> stopped = new EnumMap<>(Layer.class);
    private final Map<String, Counter> replayed = new ConcurrentHashMap<>();

    DuplicateMetrics(MeterRegistry meters) {
        this.meters = meters;
        for (Layer layer : Layer.values()) {
            stopped.put(layer, meters.counter("payonce.duplicates.stopped", "layer", layer.name().toLowerCase(Locale.ROOT)));
        }
    }

    public void stopped(Layer layer) {
        stopped.get(layer).increment();
    }

    /** An answer replayed to a duplicate, by where it was read from. */
    public void replayed(String source) {
        replayed.computeIfAbsent(source, s -> meters.counter("payonce.replays", "source", s)).increment();
    }
}
