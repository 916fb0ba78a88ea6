package io.payonce.database;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;

/** DATETIME(3) columns hold UTC written by the application; these convert both ways. */
public final class UtcTime {

    private UtcTime() {
    }

    /** Now, at the millisecond precision the columns keep, so what is returned equals what is stored. */
    public static Instant now() {
        return Instant.now().truncatedTo(ChronoUnit.MILLIS);
    }

    public static LocalDateTime toColumn(Instant instant) {
        return instant == null ? null : LocalDateTime.ofInstant(instant, ZoneOffset.UTC);
    }

    /**
     * A duration as the number an {@code INTERVAL ? MICROSECOND} takes, for times computed on the
     * database's clock ({@code DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND)}), which every instance shares.
     */
    public static long micros(Duration duration) {
        return duration.toNanos() / 1_000;
    }

    public static Instant fromColumn(LocalDateTime value) {
        return value == null ? null : value.toInstant(ZoneOffset.UTC);
    }
}
