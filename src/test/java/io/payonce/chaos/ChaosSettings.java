package io.payonce.chaos;

import java.net.URI;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.stream.IntStream;

/**
 * What one chaos run does: how long the clients pay, the seed of its fault schedule and of the clients'
 * choices, how many instances and clients, and the short service timings that let a run settle within
 * seconds of its last fault. Read from system properties {@code chaos.*} by {@link #fromSystemProperties()};
 * {@code merchantTag} is drawn anew for every run, apart from the seed.
 */
record ChaosSettings(Duration traffic, long seed, int instances, int clients, int merchants, Duration slack,
        String dbHost, int dbPort, String dbName, String dbUser, String dbPassword, String merchantTag) {

    /** The instances give the channel 1 s: every other timing is counted from it, and kept above it as the service requires. */
    static final Duration CHANNEL_TIMEOUT = Duration.ofSeconds(1);
    /** Reconciliation looks at a payment 2 s after it opened, once its owner's lease has ended too. */
    static final Duration MIN_AGE = Duration.ofSeconds(2);
    static final Duration LEASE = Duration.ofSeconds(4);
    static final Duration RECONCILE_INTERVAL = Duration.ofSeconds(1);
    /** A charge the channel still holds 15 s after its payment opened is closed there and reported not completed. */
    static final Duration GIVE_UP_AFTER = Duration.ofSeconds(15);
    /** A duplicate waits this long for the first copy's answer; the checker holds each wait to it. */
    static final Duration WAIT_BOUND = Duration.ofSeconds(3);
    /** Every database call of an instance gives up after this; a COMMIT held longer is one its owner is in doubt about. */
    static final Duration DATABASE_TIMEOUT = Duration.ofSeconds(2);
    /** "An owner answers by its channel timeout plus a few seconds": the few, as the checker counts them. */
    static final Duration OWNER_EXTRA = Duration.ofSeconds(4);

    static ChaosSettings fromSystemProperties() {
        URI direct = URI.create(System.getenv().getOrDefault("QUARKUS_DATASOURCE_JDBC_URL",
                "jdbc:mariadb://127.0.0.1:3306/test").substring("jdbc:".length()));
        return new ChaosSettings(
                duration(System.getProperty("chaos.duration", "60s")),
                Long.parseLong(System.getProperty("chaos.seed", String.valueOf(System.nanoTime() % 1_000_000))),
                Integer.parseInt(System.getProperty("chaos.instances", "2")),
                Integer.parseInt(System.getProperty("chaos.clients", "16")),
                Integer.parseInt(System.getProperty("chaos.merchants", "4")),
                Duration.ofMillis(Long.parseLong(System.getProperty("chaos.slack.ms", "1000"))),
                direct.getHost() == null ? "127.0.0.1" : direct.getHost(),
                direct.getPort() < 0 ? 3306 : direct.getPort(),
                System.getProperty("chaos.db.name", "payonce_chaos"),
                System.getenv().getOrDefault("QUARKUS_DATASOURCE_USERNAME", "root"),
                System.getenv().getOrDefault("QUARKUS_DATASOURCE_PASSWORD", ""),
                randomTag());
    }

    ChaosSettings {
        if (instances < 2) {
            throw new IllegalArgumentException("a chaos run needs two instances or more, not " + instances);
        }
        if (clients < 1 || merchants < 1) {
            throw new IllegalArgumentException("a chaos run needs clients and merchants");
        }
        if (traffic.toSeconds() < 10) {
            throw new IllegalArgumentException("a chaos run pays for 10 s at least, not " + traffic);
        }
    }

    ChaosSettings withTraffic(Duration other) {
        return new ChaosSettings(other, seed, instances, clients, merchants, slack, dbHost, dbPort, dbName, dbUser,
                dbPassword, merchantTag);
    }

    ChaosSettings withSeed(long other) {
        return new ChaosSettings(traffic, other, instances, clients, merchants, slack, dbHost, dbPort, dbName, dbUser,
                dbPassword, merchantTag);
    }

    /**
     * The run's merchants, each also a broker user of that name (the queue entrance's merchant is the publishing
     * user): broker users are broker-wide, so the names carry this run's random tag.
     */
    List<String> merchantIds() {
        return IntStream.range(0, merchants).mapToObj(i -> "m_chaos_" + merchantTag + "_" + i).toList();
    }

    /** Eight lower-case letters and digits, as a broker user's name may carry them. */
    private static String randomTag() {
        String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
        SecureRandom random = new SecureRandom();
        StringBuilder tag = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            tag.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        return tag.toString();
    }

    String jdbcUrl() {
        return "jdbc:mariadb://" + dbHost + ":" + dbPort + "/" + dbName;
    }

    /** {@code 90}, {@code 90s}, {@code 15m}, {@code 1h} or an ISO-8601 duration. */
    static Duration duration(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.startsWith("p")) {
            return Duration.parse(t.toUpperCase(Locale.ROOT));
        }
        if (t.endsWith("ms")) {
            return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2)));
        }
        char unit = t.charAt(t.length() - 1);
        String number = Character.isDigit(unit) ? t : t.substring(0, t.length() - 1);
        long n = Long.parseLong(number);
        return switch (unit) {
            case 'm' -> Duration.ofMinutes(n);
            case 'h' -> Duration.ofHours(n);
            default -> Duration.ofSeconds(n);
        };
    }

    /** A duration as the service's configuration takes it. */
    static String setting(Duration duration) {
        return duration.toMillis() + "ms";
    }
}
