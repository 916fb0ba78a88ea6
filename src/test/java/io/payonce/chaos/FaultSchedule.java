package io.payonce.chaos;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * The faults of one run, drawn from its seed before anything starts: the same seed, duration, instances and
 * merchants give the same schedule. Every kind comes once first, in an order of the seed's, one every 1.8 s
 * on average, as far as the run is long enough and each kind's resource is free in time (a minute holds all
 * of them or all but two or three), then kinds are drawn by weight, one every 2.5 s on average. Faults on one
 * resource (an instance, Redis, MySQL, the way to the channel, the broker and the instances' ways to it) do
 * not overlap, and at least one instance is meant to be up at any time; an instance fault that finds its
 * target still restarting is skipped when its time comes (restarts take as long as the machine makes them).
 */
final class FaultSchedule {

    /** What a fault does, and what it is called in the summary. */
    enum Kind {
        KILL_INSTANCE("kill -9 of an instance", 3),
        TERMINATE_INSTANCE("SIGTERM of an instance", 2),
        REDIS_KILLED("Redis killed", 1),
        REDIS_FLUSHED("Redis flushed", 2),
        REDIS_SLOW("Redis slow", 1),
        REDIS_STALLED("Redis stalled", 1),
        REDIS_PARTITIONED("Redis partitioned", 1),
        OWNER_PAUSED("an owner paused past its lease", 2),
        MYSQL_RESET("MySQL connections reset", 2),
        MYSQL_BLACK_HOLE("MySQL black-holed", 2),
        MYSQL_LATE_COMMIT("a COMMIT reaching MySQL late", 2),
        MYSQL_LATE_COMMIT_ANSWER("a COMMIT answered late", 2),
        MYSQL_UNDO_COMMIT_ANSWER_LATE("an undo's COMMIT answered late", 2),
        MYSQL_OUTBOX_REFUSED("outbox statements refused", 2),
        CHANNEL_CHARGE_LOST("a charge lost on the way to the channel", 2),
        CHANNEL_PARTITIONED("channel partitioned", 1),
        BROKER_CUT("broker connection cut", 2),
        BROKER_NODE_KILLED("broker node killed", 1),
        SANDBOX_SLOW("channel slow", 2),
        SANDBOX_DECLINE("channel declines", 2),
        SANDBOX_REFUSE("channel refuses before accepting", 2),
        SANDBOX_ANSWER_LOST("channel accepts, answer lost", 2),
        SANDBOX_LATE_ACCEPT("channel accepts long after the timeout", 2),
        SANDBOX_REFUND_SLOW("channel slow to refund", 1),
        SANDBOX_REFUND_DECLINE("channel declines refunds", 1),
        SANDBOX_REFUND_REFUSE("channel refuses refunds before accepting", 1),
        SANDBOX_REFUND_ANSWER_LOST("channel accepts refunds, answer lost", 1);

        final String label;
        final int weight;

        Kind(String label, int weight) {
            this.label = label;
            this.weight = weight;
        }

        /** Stops one instance for a while: the others must stay up meanwhile. */
        boolean onInstance() {
            return stopsInstance() || this == OWNER_PAUSED;
        }

        /** Ends an instance's process: it is started again, and its fault ends once it is ready. */
        boolean stopsInstance() {
            return this == KILL_INSTANCE || this == TERMINATE_INSTANCE;
        }

        /** Ends a process that is started again (an instance, the broker node): the fault ends once it is ready. */
        boolean restarts() {
            return stopsInstance() || this == BROKER_NODE_KILLED;
        }

        /** Holds one COMMIT (or its answer) on one instance's way to MySQL, longer than its database timeout. */
        boolean holdsCommit() {
            return this == MYSQL_LATE_COMMIT || this == MYSQL_LATE_COMMIT_ANSWER;
        }

        boolean onRedis() {
            return name().startsWith("REDIS");
        }

        boolean onMysql() {
            return name().startsWith("MYSQL");
        }

        boolean onChannelPath() {
            return name().startsWith("CHANNEL");
        }

        boolean onSandbox() {
            return name().startsWith("SANDBOX");
        }

        /** A sandbox behaviour for the merchant's next refunds rather than its next charges. */
        boolean onRefunds() {
            return name().startsWith("SANDBOX_REFUND");
        }

        /**
         * Cuts one instance's way to RabbitMQ (its connection reset, new ones refused, then let through again), or
         * kills the broker node (every connection gone, the node started again on its data).
         */
        boolean onBroker() {
            return name().startsWith("BROKER");
        }
    }

    /**
     * One fault: at {@code atMs} into the run, lasting {@code lastsMs} (an instance stays down or paused, a proxy
     * stays faulty, a COMMIT or its answer is held, the broker node stays down), on {@code instance} or
     * {@code merchant}'s next {@code count} charges, each taking {@code latencyMs} (for Redis slow: the delay added
     * to every chunk; for an owner paused: how much slower every merchant's next charge is made first; the
     * instance is stopped a quarter of that after the next opening it runs, so that its owner is likely inside
     * that charge; for an undo's COMMIT answered late: how long the merchant's next charge (and every idle
     * merchant's) is pending before the channel refuses it, the owner then undoing its opening, whichever
     * instance it is on).
     */
    record Fault(long atMs, Kind kind, int instance, String merchant, long lastsMs, long latencyMs, int count) {

        String describe() {
            String what = kind.label;
            if (kind.stopsInstance()) {
                what += " #" + instance + ", restarted " + lastsMs + " ms later";
            } else if (kind == Kind.OWNER_PAUSED) {
                what += ": every merchant's next charge " + latencyMs + " ms slow, #" + instance + " stopped "
                        + latencyMs / 4 + " ms after an opening there, for " + lastsMs + " ms";
            } else if (kind.holdsCommit()) {
                what += " on #" + instance + "'s way to MySQL, by " + lastsMs + " ms";
            } else if (kind == Kind.MYSQL_UNDO_COMMIT_ANSWER_LATE) {
                what += ": the next charge of " + merchant + " (and of every merchant with no behaviour of its own) refused"
                        + " after " + latencyMs + " ms, by " + lastsMs + " ms";
            } else if (kind == Kind.BROKER_NODE_KILLED) {
                what += ", started again " + lastsMs + " ms later";
            } else if (kind.onBroker()) {
                what += " on #" + instance + "'s way to the broker, for " + lastsMs + " ms";
            } else if (kind.onSandbox()) {
                what += " for " + merchant + ": next " + count + (kind.onRefunds() ? " refund(s), " : " charge(s), ")
                        + latencyMs + " ms";
            } else if (kind == Kind.REDIS_SLOW) {
                what += " (+" + latencyMs + " ms a chunk) for " + lastsMs + " ms";
            } else if (kind != Kind.REDIS_FLUSHED) {
                what += " for " + lastsMs + " ms";
            }
            return String.format("%6.1f s  %s", atMs / 1000.0, what);
        }
    }

    /** How long after its start an instance is counted busy by the schedule: down, then a slow restart. */
    private static final long RESTART_ALLOWANCE_MS = 20_000;
    /** A paused instance is counted busy this much longer: the wait for an opening there, then its backlog. */
    private static final long PAUSE_ALLOWANCE_MS = 8_000;
    /** How long a COMMIT hold stays armed for the COMMIT it is meant for. */
    static final long COMMIT_CATCH_MS = 5_000;
    /** How long after its kill the broker is counted busy by the schedule: down, then a slow start. */
    private static final long BROKER_START_ALLOWANCE_MS = 20_000;
    /** Nothing starts in the first seconds (the clients' first orders) nor in the last ones (heal follows). */
    private static final long QUIET_START_MS = 3_000;
    private static final long QUIET_END_MS = 4_000;
    private static final long MEAN_GAP_MS = 2_500;
    /** While every kind has not come once yet: so that a minute holds nearly all of them. */
    private static final long FIRST_ROUND_GAP_MS = 1_800;

    private final List<Fault> faults;

    private FaultSchedule(List<Fault> faults) {
        this.faults = Collections.unmodifiableList(faults);
    }

    List<Fault> faults() {
        return faults;
    }

    static FaultSchedule draw(long seed, long trafficMs, int instances, List<String> merchants) {
        Random random = new Random(seed);
        Drawing drawing = new Drawing(random, instances, merchants);
        // every kind once first, in a random order, as far as the run is long enough; then at random by weight
        List<Kind> owed = new ArrayList<>(List.of(Kind.values()));
        Collections.shuffle(owed, random);
        for (long at = QUIET_START_MS + random.nextInt(2_000); at < trafficMs - QUIET_END_MS;
                at += 500 + random.nextInt((int) (2 * (owed.isEmpty() ? MEAN_GAP_MS : FIRST_ROUND_GAP_MS) - 1_000))) {
            long now = at;
            Kind kind = owed.stream().filter(k -> drawing.fits(k, now)).findFirst().orElse(pick(random));
            owed.remove(kind);
            if (drawing.fits(kind, at)) {
                drawing.add(kind, at);
            }
        }
        return new FaultSchedule(drawing.faults);
    }

    /** The faults drawn so far, and until when each resource is taken by one of them. */
    private static final class Drawing {
        private final Random random;
        private final List<String> merchants;
        private final long[] instanceBusyUntil;
        private long redisBusyUntil;
        private long mysqlBusyUntil;
        private long channelBusyUntil;
        private long brokerBusyUntil;
        private final List<Fault> faults = new ArrayList<>();

        Drawing(Random random, int instances, List<String> merchants) {
            this.random = random;
            this.merchants = merchants;
            this.instanceBusyUntil = new long[instances];
        }

        /** Whether the kind's resource is free at {@code at}; for an instance, whether another would stay up. */
        boolean fits(Kind kind, long at) {
            if (kind.onInstance()) {
                return freeInstances(at).size() >= 2;
            }
            if (kind.onRedis()) {
                return redisBusyUntil <= at;
            }
            if (kind.holdsCommit()) {
                return mysqlBusyUntil <= at && !freeInstances(at).isEmpty();
            }
            if (kind.onMysql()) {
                return mysqlBusyUntil <= at;
            }
            if (kind.onBroker()) {
                return brokerBusyUntil <= at;
            }
            return !kind.onChannelPath() || channelBusyUntil <= at;
        }

        void add(Kind kind, long at) {
            if (kind == Kind.OWNER_PAUSED) {
                List<Integer> free = freeInstances(at);
                int target = free.get(random.nextInt(free.size()));
                // past the lease and reconciliation's min-age, so that another instance takes its payments over
                long paused = ChaosSettings.LEASE.plus(ChaosSettings.MIN_AGE).toMillis() + 1_000 + random.nextInt(3_000);
                // under the channel timeout: the slowed charge is answered, while its owner is stopped
                long slower = 300 + random.nextInt(600);
                instanceBusyUntil[target] = at + paused + PAUSE_ALLOWANCE_MS;
                faults.add(new Fault(at, kind, target, null, paused, slower, 1));
            } else if (kind.onInstance()) {
                List<Integer> free = freeInstances(at);
                int target = free.get(random.nextInt(free.size()));
                long down = kind == Kind.KILL_INSTANCE ? 1_000 + random.nextInt(7_000) : 500 + random.nextInt(4_000);
                instanceBusyUntil[target] = at + down + RESTART_ALLOWANCE_MS;
                faults.add(new Fault(at, kind, target, null, down, 0, 0));
            } else if (kind.holdsCommit()) {
                // an instance that is up, and stays up while its COMMIT is held
                List<Integer> free = freeInstances(at);
                int target = free.get(random.nextInt(free.size()));
                // above the instances' database timeout, so that the owner gives the COMMIT up as in doubt
                long held = ChaosSettings.DATABASE_TIMEOUT.toMillis() + 500 + random.nextInt(1_500);
                mysqlBusyUntil = at + COMMIT_CATCH_MS + held + 2_000;
                instanceBusyUntil[target] = at + COMMIT_CATCH_MS + held;
                faults.add(new Fault(at, kind, target, null, held, 0, 0));
            } else if (kind.onRedis()) {
                long lasts = switch (kind) {
                    case REDIS_FLUSHED -> 0;
                    case REDIS_KILLED -> 1_000 + random.nextInt(5_000);
                    case REDIS_SLOW -> 2_000 + random.nextInt(6_000);
                    case REDIS_STALLED -> 1_000 + random.nextInt(4_000);
                    default -> 2_000 + random.nextInt(6_000);
                };
                long latency = kind == Kind.REDIS_SLOW ? 50 + random.nextInt(750) : 0;
                redisBusyUntil = at + lasts + 500;
                faults.add(new Fault(at, kind, -1, null, lasts, latency, 0));
            } else if (kind == Kind.MYSQL_UNDO_COMMIT_ANSWER_LATE) {
                // a charge refused after a moment (time to arm the hold), whose owner then undoes its opening and is
                // answered its COMMIT later than its database timeout
                String merchant = merchants.get(random.nextInt(merchants.size()));
                long refusedAfter = 300 + random.nextInt(700);
                long held = ChaosSettings.DATABASE_TIMEOUT.toMillis() + 500 + random.nextInt(1_500);
                mysqlBusyUntil = at + COMMIT_CATCH_MS + held + 2_000;
                faults.add(new Fault(at, kind, -1, merchant, held, refusedAfter, 1));
            } else if (kind.onMysql()) {
                long lasts = kind == Kind.MYSQL_RESET ? random.nextInt(2_500)
                        : kind == Kind.MYSQL_OUTBOX_REFUSED ? 2_000 + random.nextInt(4_000) : 1_000 + random.nextInt(5_000);
                mysqlBusyUntil = at + lasts + 2_000;
                faults.add(new Fault(at, kind, -1, null, lasts, 0, 0));
            } else if (kind == Kind.BROKER_NODE_KILLED) {
                long down = 2_000 + random.nextInt(3_000);
                brokerBusyUntil = at + down + BROKER_START_ALLOWANCE_MS;
                faults.add(new Fault(at, kind, -1, null, down, 0, 0));
            } else if (kind.onBroker()) {
                // an instance that is up, most likely holding deliveries; any one when none is
                List<Integer> free = freeInstances(at);
                int target = free.isEmpty() ? random.nextInt(instanceBusyUntil.length)
                        : free.get(random.nextInt(free.size()));
                long lasts = 1_000 + random.nextInt(4_000);
                // the client library tries to recover every 2 s: the cut is over once it has
                brokerBusyUntil = at + lasts + 2_500;
                faults.add(new Fault(at, kind, target, null, lasts, 0, 0));
            } else if (kind.onChannelPath()) {
                long lasts = kind == Kind.CHANNEL_CHARGE_LOST ? 200 + random.nextInt(1_300) : 1_000 + random.nextInt(3_000);
                channelBusyUntil = at + lasts + 500;
                faults.add(new Fault(at, kind, -1, null, lasts, 0, 0));
            } else {
                String merchant = merchants.get(random.nextInt(merchants.size()));
                int count = 1 + random.nextInt(4);
                long latency = switch (kind) {
                    case SANDBOX_SLOW, SANDBOX_REFUND_SLOW -> 300 + random.nextInt(2_700);
                    case SANDBOX_DECLINE, SANDBOX_REFUSE, SANDBOX_REFUND_DECLINE, SANDBOX_REFUND_REFUSE -> random.nextInt(400);
                    case SANDBOX_ANSWER_LOST -> 0;
                    // answered past the channel timeout, now and then past give-up-after: settled later, or closed
                    case SANDBOX_REFUND_ANSWER_LOST -> random.nextInt(3) == 0 ? 0 : 2_000 + random.nextInt(25_000);
                    // up to twice give-up-after: some are closed at the channel first, then answered payment_not_completed
                    default -> 3_000 + random.nextInt(27_000);
                };
                faults.add(new Fault(at, kind, -1, merchant, 0, latency, count));
            }
        }

        private List<Integer> freeInstances(long at) {
            List<Integer> free = new ArrayList<>();
            for (int i = 0; i < instanceBusyUntil.length; i++) {
                if (instanceBusyUntil[i] <= at) {
                    free.add(i);
                }
            }
            return free;
        }
    }

    private static final int TOTAL_WEIGHT = java.util.Arrays.stream(Kind.values()).mapToInt(k -> k.weight).sum();

    private static Kind pick(Random random) {
        int n = random.nextInt(TOTAL_WEIGHT);
        for (Kind kind : Kind.values()) {
            n -= kind.weight;
            if (n < 0) {
                return kind;
            }
        }
        throw new IllegalStateException("weights");
    }
}
