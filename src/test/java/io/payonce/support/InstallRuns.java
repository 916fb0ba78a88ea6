package io.payonce.support;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Runs the install step of the cluster test servers again and again, to find out whether it fails now and
 * then; a harness run by hand, not a test. Each round installs {@code CLUSTERS} Galera clusters (three
 * nodes one after the other, as {@link GaleraCluster#start} does) and {@code PAIRS} primary-and-replica pairs
 * (two side by side, as {@link ReplicatedMariaDb#start} does), all at the same time, while {@code BURNERS}
 * threads keep the processors busy as the application instances starting beside them in a test run do.
 * Prints every failure with its install log's last words, then how many installs of each kind ran and
 * failed (a cluster's stops at its first failed node); exits 1 when any failed. It installs under the
 * working directory's {@code target/}: run from a copy of the checkout elsewhere (under /root, in a
 * {@code mktemp -d} directory, under umask 077) it installs as a fresh CI clone there would.
 *
 * <pre>
 * ./mvnw -B -o -q test-compile dependency:build-classpath -Dmdep.includeScope=test \
 *     -Dmdep.outputFile=target/test-classpath.txt
 * java -cp target/test-classes:$(cat target/test-classpath.txt) io.payonce.support.InstallRuns \
 *     ROUNDS MAX_SECONDS CLUSTERS PAIRS BURNERS
 * </pre>
 */
public final class InstallRuns {

    private InstallRuns() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: InstallRuns ROUNDS MAX_SECONDS CLUSTERS PAIRS BURNERS");
            System.exit(2);
        }
        int rounds = Integer.parseInt(args[0]);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[1]));
        int clusters = Integer.parseInt(args[2]);
        int pairs = Integer.parseInt(args[3]);
        int burners = Integer.parseInt(args[4]);

        AtomicBoolean burning = new AtomicBoolean(true);
        for (int i = 0; i < burners; i++) {
            Thread.ofPlatform().daemon().name("burner-" + i).start(() -> {
                while (burning.get()) {
                    Thread.onSpinWait();
                }
            });
        }
        ExecutorService pool = Executors.newCachedThreadPool();
        int round = 0;
        int clusterFailures = 0;
        int pairFailures = 0;
        try {
            while (round < rounds && System.nanoTime() < deadline) {
                round++;
                List<Future<?>> installs = new ArrayList<>();
                for (int c = 1; c <= clusters; c++) {
                    GaleraCluster cluster = GaleraCluster.named("installs-" + c);
                    installs.add(pool.submit(() -> {
                        try {
                            cluster.installNodes();
                        } finally {
                            cluster.deleteFiles();
                        }
                        return null;
                    }));
                }
                for (int p = 1; p <= pairs; p++) {
                    ReplicatedMariaDb pair = ReplicatedMariaDb.named("installs-" + p, "installs");
                    installs.add(pool.submit(() -> {
                        try {
                            pair.installBoth();
                        } finally {
                            pair.close();
                        }
                        return null;
                    }));
                }
                for (int i = 0; i < installs.size(); i++) {
                    try {
                        installs.get(i).get(10, TimeUnit.MINUTES);
                    } catch (ExecutionException e) {
                        boolean cluster = i < clusters;
                        clusterFailures += cluster ? 1 : 0;
                        pairFailures += cluster ? 0 : 1;
                        System.out.println("round " + round + ", " + (cluster ? "cluster " + (i + 1)
                                : "pair " + (i + 1 - clusters)) + ": " + e.getCause());
                    }
                }
            }
        } finally {
            burning.set(false);
            pool.shutdownNow();
        }
        System.out.println("rounds " + round + " (each " + clusters + " three-node clusters, " + pairs
                + " pairs, " + burners + " busy threads): cluster installs " + round * clusters + ", failed "
                + clusterFailures + "; pair installs " + round * pairs + ", failed " + pairFailures);
        System.exit(clusterFailures + pairFailures == 0 ? 0 : 1);
    }
}
