package io.payonce.chaos;

/**
 * The chaos run's command line (scripts/chaos.sh): settings from system properties ({@code chaos.duration},
 * {@code chaos.seed}, {@code chaos.instances}, {@code chaos.clients}, {@code chaos.merchants},
 * {@code chaos.slack.ms}, {@code chaos.db.name}); prints the report; exits 0 when no invariant was violated,
 * 1 when one was, 2 when the harness itself could not judge the run.
 */
public final class Chaos {

    private Chaos() {
    }

    public static void main(String[] args) throws Exception {
        int exit;
        try {
            ChaosRun.Result result = ChaosRun.run(ChaosSettings.fromSystemProperties());
            System.out.println(result.report());
            exit = result.exitCode();
        } catch (Exception | AssertionError e) {
            e.printStackTrace();
            exit = 2;
        }
        System.out.flush();
        // the clients' and proxies' threads are daemons; REST Assured's are not all
        System.exit(exit);
    }
}
