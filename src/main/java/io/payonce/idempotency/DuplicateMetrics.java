package io.payonce.idempotency;

import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;

import jakarta.inject.Singleton;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.Startup;

/**
 * Counters for the duplicates each layer stopped and the answers replayed. Every series exists from the start
 * (zero), so that panels and alerts see it before the first duplicate; each is looked up once, as a registry
 * lookup builds and sorts the meter's tags.
 */
@Startup
@Singleton
public class DuplicateMetrics {

    /** The layer that stopped a duplicate. */
    public enum Layer {
        REDIS, TOKEN, UNIQUE_INDEX, STATE_MACHINE
    }

    /**
     * Where a replayed answer was read: the Redis cache, a pub/sub wake-up, the MySQL row, or what a wait had
     * seen when its deadline came (the first execution's 202).
     */
    public enum Source {
        REDIS, PUBSUB, MYSQL, DEADLINE
    }

    private final Map<Layer, Counter> stopped = new EnumMap<>(Layer.class);
    private final Map<Source, Counter> replayed = new EnumMap<>(Source.class);

    DuplicateMetrics(MeterRegistry meters) {
        for (Layer layer : Layer.values()) {
            stopped.put(layer, meters.counter("payonce.duplicates.stopped", "layer", tagValue(layer)));
        }
        for (Source source : Source.values()) {
            replayed.put(source, meters.counter("payonce.replays", "source", tagValue(source)));
        }
    }

    public void stopped(Layer layer) {
        stopped.get(layer).increment();
    }

    /** An answer replayed to a duplicate, by where it was read from. */
    public void replayed(Source source) {
        replayed.get(source).increment();
    }

    private static String tagValue(Enum<?> value) {
        return value.name().toLowerCase(Locale.ROOT);
    }
}
