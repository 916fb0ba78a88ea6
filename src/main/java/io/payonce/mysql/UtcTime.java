package io.payonce.mysql;

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

    public static Instant fromColumn(LocalDateTime value) {
        return value == null ? null : value.toInstant(ZoneOffset.UTC);
    }
}
