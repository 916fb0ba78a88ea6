package io.payonce.refund;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Concurrently;
import io.payonce.support.GaleraCluster;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.RefundLedger;
import io.payonce.support.PayClient.RefundRequest;
import io.payonce.support.ServerLogs;

/**
 * Two instances of the packaged application on a three-node MariaDB Galera cluster, A on node 1 and B on
 * node 2, refunding one order with ten refunds of 30% each split across them: the reservations on the two
 * nodes only meet at certification, where one of two conflicting transactions is rolled back. A refund so
 * rolled back must run again, so exactly three are refunded and seven refused for their amount, none
 * refused for the conflict and none answered 503; the channel's ledger and the order on every node agree.
 *
 * <p>The channel is the sandbox of a third instance on the shared MariaDB, so its ledger is no node's.
 */
@ExtendWith(ServerLogs.OnFailure.class)
class RefundGaleraIT {

    private static final String MERCHANT = "merchant_refund_galera";
    private static final int NODE_A = 1;
    private static final int NODE_B = 2;
    private static final long PART = PayClient.AMOUNT * 3 / 10;
    private static final int REFUNDS = 10;
    /** Orders raced at once, each by its own ten refunds: more conflicts at certification in one storm. */
    private static final int ORDERS = 3;
    /** Long enough that every racing refund of an order opens while the first ones are still at the channel. */
    private static final long REFUND_LATENCY_MS = 300;
    /** Storms at most, until one meets a conflict at certification. */
    private static final int STORMS = 5;
    private static final Duration RACE_BOUND = Duration.ofSeconds(60);

    private static GaleraCluster cluster;
    private static AppProcess channelApp;
    private static AppProcess instanceA;
    private static AppProcess instanceB;

    @BeforeAll
    static void startClusterAndInstances() throws Exception {
        String missing = GaleraCluster.missingTools();
        Assumptions.assumeTrue(missing == null, missing);
        // on the build's own database and Redis, serving only its sandbox
        channelApp = AppProcess.named("refund-galera-channel").env("PAYONCE_RECONCILE_INTERVAL", "1h");
        channelApp.start();
        cluster = GaleraCluster.named("refund");
        Duration clusterStart = cluster.start();
        System.out.println("RefundGaleraIT: three nodes Synced in " + clusterStart.toMillis() + " ms");
        instanceA = instanceOn("refund-galera-a", NODE_A);
        instanceB = instanceOn("refund-galera-b", NODE_B);
        // A alone migrates the fresh schema; B finds it replicated to its node
        instanceA.start().awaitReady();
        instanceB.start().awaitReady();
        channelApp.awaitReady();
    }

    @AfterAll
    static void stopAll() throws InterruptedException {
        AppProcess.closeAll(instanceA, instanceB, channelApp);
        if (cluster != null) {
            cluster.close();
        }
    }

    /**
     * Storms of {@link #ORDERS} orders at once, each raced by its ten refunds, until the storms have met a
     * conflict at certification on node 1 or 2 (a storm that met none proves nothing of the rerun), at most
     * {@link #STORMS} of them; every storm's answers and books are checked.
     */
    @Test
    void tenRefundsOfThirtyPercentSplitAcrossNodes_threeSucceed_sevenExceedThePayment_noneRefusedForTheConflict() {
        PayClient[] on = { new PayClient(instanceA, MERCHANT), new PayClient(instanceB, MERCHANT) };
        PayClient channel = new PayClient(channelApp, MERCHANT);
        channel.sandbox("ok", 0, 0);
        long[] before = conflicts();
        long met = 0;
        List<Executable> checks = new ArrayList<>();
        for (int storm = 1; storm <= STORMS && met == 0; storm++) {
            checks.addAll(storm(storm, on, channel));
            long[] now = conflicts();
            met = IntStream.range(0, now.length).mapToLong(i -> now[i] - before[i]).sum();
            System.out.println("RefundGaleraIT: after storm " + storm + ", since the first: " + describe(before, now));
        }
        assertAll(checks);
        assertTrue(met > 0, "the storms met no conflict at certification: they did not race across the nodes");
    }

    /** One storm; answers the checks of each of its orders, to be judged with the others'. */
    private List<Executable> storm(int storm, PayClient[] on, PayClient channel) {
        List<String> orders = IntStream.range(0, ORDERS).mapToObj(i -> on[0].paidOrder().orderNo()).toList();
        // every refund's token from the instance it goes to; the orders read back causally on node 2, so B finds them
        List<List<RefundRequest>> refunds = orders.stream().map(orderNo -> IntStream.range(0, REFUNDS)
                .mapToObj(i -> on[i % 2].newRefund(orderNo, PART)).toList()).toList();
        orders.forEach(orderNo -> assertEquals("PAID", orderOnNode(NODE_B, "status", orderNo), "paid, as node 2 sees it"));
        channel.refundBehavior("ok", REFUND_LATENCY_MS, ORDERS * REFUNDS);
        long[] before = conflicts();

        List<List<Answer>> answers = Concurrently.bursts(ORDERS, REFUNDS, ORDERS * REFUNDS, RACE_BOUND,
                (order, copy) -> on[copy % 2].refund(refunds.get(order).get(copy)));

        String conflicts = describe(before, conflicts());
        System.out.println("RefundGaleraIT: storm " + storm + " answers " + answers.stream()
                .map(RefundMultiInstanceIT::tally).toList() + "; " + conflicts);
        return IntStream.range(0, ORDERS).mapToObj(i -> (Executable) () -> {
            String orderNo = orders.get(i);
            List<Answer> race = answers.get(i);
            String seen = "storm " + storm + ", " + orderNo + " (" + conflicts + "): " + RefundMultiInstanceIT.tally(race)
                    + ", " + RefundMultiInstanceIT.unexpected(race);
            assertTrue(race.stream().noneMatch(a -> a.status() >= 500 || !a.answered()), () -> "none unanswered or 5xx: " + seen);
            assertEquals(3, race.stream().filter(a -> a.status() == 200).count(), () -> "three refunded: " + seen);
            assertEquals(7, race.stream().filter(a -> a.status() == 422 && "refund_exceeds_payment".equals(a.code()))
                    .count(), () -> "seven refused for their amount: " + seen);
            RefundLedger ledger = channel.refundLedger(orderNo);
            assertEquals(3, ledger.refunds(), () -> "three refunds at the channel: " + seen);
            assertEquals(3 * PART, ledger.refundedAmount(), () -> "the channel's refunded amount: " + seen);
            for (int node = 1; node <= GaleraCluster.NODES; node++) {
                assertEquals(Long.toString(ledger.refundedAmount()), orderOnNode(node, "refunded_amount", orderNo),
                        "the order's refunded amount on node " + node + ": " + seen);
                assertEquals("0", orderOnNode(node, "reserved_amount", orderNo), "nothing left reserved on node " + node);
                assertEquals("PARTIALLY_REFUNDED", orderOnNode(node, "status", orderNo), "on node " + node);
            }
        }).toList();
    }

    /** A column of the merchant's order on {@code node}, read causally. */
    private static String orderOnNode(int node, String column, String orderNo) {
        return cluster.value(node, "SELECT " + column + " FROM orders WHERE merchant_id = ? AND order_no = ?", MERCHANT,
                orderNo);
    }

    private static String describe(long[] before, long[] after) {
        return "node 1: " + (after[0] - before[0]) + " certification failures and " + (after[1] - before[1])
                + " brute-force aborts, node 2: " + (after[2] - before[2]) + " and " + (after[3] - before[3]);
    }

    /** Certification failures and brute-force aborts so far on node 1, then on node 2. */
    private static long[] conflicts() {
        return new long[] { cluster.counter(NODE_A, "wsrep_local_cert_failures"),
                cluster.counter(NODE_A, "wsrep_local_bf_aborts"), cluster.counter(NODE_B, "wsrep_local_cert_failures"),
                cluster.counter(NODE_B, "wsrep_local_bf_aborts") };
    }

    /** A payment instance on {@code node}, refunding through the channel instance's sandbox. */
    private static AppProcess instanceOn(String name, int node) throws Exception {
        return AppProcess.named(name)
                .channel(channelApp.sandboxUrl())
                .env("QUARKUS_DATASOURCE_REACTIVE_URL", cluster.reactiveUrl(node))
                .env("QUARKUS_DATASOURCE_JDBC_URL", cluster.jdbcUrl(node))
                .env("PAYONCE_SANDBOX_ENABLED", "false")
                .env("PAYONCE_CHANNEL_TIMEOUT", "3s");
    }
}
