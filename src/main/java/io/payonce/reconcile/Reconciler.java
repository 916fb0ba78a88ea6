package io.payonce.reconcile;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.PayOnceConfig;
import io.payonce.channel.ChargeResult;
import io.payonce.database.Database;
import io.payonce.database.UtcTime;
import io.payonce.idempotency.IdempotencyGate;
import io.payonce.idempotency.TokenRepository;
import io.payonce.payment.Payment;
import io.payonce.payment.PaymentExecutor;
import io.payonce.payment.PaymentKind;
import io.payonce.payment.PaymentRepository;
import io.quarkus.runtime.Startup;
import io.quarkus.scheduler.Scheduled;
import io.smallrye.mutiny.Uni;
import org.jboss.logging.Logger;

/**
 * The recovery jobs, safe to run on every instance at once: completes payments left PROCESSING by a
 * process that no longer holds them, on the channel's word only and always with the payment's own
 * request number; releases tokens whose owner died before any payment record existed; and purges
 * expired tokens in bounded batches.
 */
@Startup
@ApplicationScoped
public class Reconciler {

    private static final Logger LOG = Logger.getLogger(Reconciler.class);
    private static final int BATCH = 20;
    /** Longer than a batch of channel calls running side by side, each bounded by the channel timeout. */
    private static final Duration CLAIM_LEASE = Duration.ofSeconds(60);
    /**
     * A run that has not ended by then fails, so one hung on a silent database or channel cannot hold off
     * later runs (a run is skipped while another is under way). Under the claim lease, so the payments a
     * run gave up on are not taken by the next one while it might still be working on them.
     */
    private static final Duration RUN_BOUND = Duration.ofSeconds(45);
    private static final Duration FIRST_BACKOFF = Duration.ofSeconds(5);
    private static final Duration MAX_BACKOFF = Duration.ofMinutes(5);
    private static final int PURGE_BATCH = 500;
    private static final int PURGE_BATCHES_PER_RUN = 20;

    private final PaymentRepository payments;
    private final TokenRepository tokens;
    private final PaymentExecutor executor;
    private final IdempotencyGate gate;
    private final Database db;
    private final PayOnceConfig config;
    /** What became of each charge and refund a run took up, by kind, counted from the start. */
    private final Map<PaymentKind, Map<Outcome, Counter>> outcomes = new EnumMap<>(PaymentKind.class);
    private final Counter failedRuns;
    /** Scheduled runs that failed since the last one that ended well: an alert's measure of "repeatedly". */
    private final AtomicInteger failedInARow = new AtomicInteger();

    Reconciler(PaymentRepository payments, TokenRepository tokens, PaymentExecutor executor, IdempotencyGate gate,
            Database db, PayOnceConfig config, MeterRegistry meters) {
        this.payments = payments;
        this.tokens = tokens;
        this.executor = executor;
        this.gate = gate;
        this.db = db;
        this.config = config;
        for (PaymentKind kind : PaymentKind.values()) {
            Map<Outcome, Counter> ofKind = new EnumMap<>(Outcome.class);
            for (Outcome outcome : Outcome.values()) {
                ofKind.put(outcome, meters.counter("payonce.reconcile.outcomes", "outcome",
                        outcome.name().toLowerCase(Locale.ROOT), "kind", kind.name().toLowerCase(Locale.ROOT)));
            }
            outcomes.put(kind, ofKind);
        }
        // registered at 0, so that the first failure is an increase a rate over the counter sees
        this.failedRuns = meters.counter("payonce.reconcile.failed_runs");
        Gauge.builder("payonce.reconcile.consecutive_failed_runs", failedInARow, AtomicInteger::get)
                .description("scheduled reconciliation runs that failed since the last one that ended well")
                .strongReference(true).register(meters);
    }

    /**
     * What became of a payment reconciliation took up: settled by its call on the channel's word (succeeded,
     * declined, or not completed when closed), settled by someone else meanwhile, or asked again later.
     */
    private enum Outcome {
        SUCCEEDED, DECLINED, NOT_COMPLETED, SETTLED_ELSEWHERE, PENDING, UNKNOWN
    }

    /** What one run did. */
    public record Report(int settled, int postponed, int leasesReleased, int tokensPurged) {
    }

    @Scheduled(every = "${payonce.reconcile.interval}", delayed = "${payonce.reconcile.interval}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    Uni<Void> scheduled() {
        return runOnce()
                .ifNoItem().after(RUN_BOUND).fail()
                .invoke(report -> {
                    failedInARow.set(0);
                    if (report.settled() + report.postponed() + report.leasesReleased() + report.tokensPurged() > 0) {
                        LOG.infof("reconciliation: %s", report);
                    }
                })
                .onFailure().invoke(e -> {
                    failedRuns.increment();
                    failedInARow.incrementAndGet();
                    LOG.warnf("reconciliation run failed, next run retries: %s", e.toString());
                })
                .onFailure().recoverWithNull()
                .replaceWithVoid();
    }

    public Uni<Report> runOnce() {
        return settleProcessing().flatMap(counts -> releaseDeadLeases()
                .flatMap(released -> purgeExpired(0, 0)
                        .map(purged -> new Report(counts[0], counts[1], released, purged))));
    }

    /**
     * Takes over a batch of PROCESSING payments that are old enough and whose owner's lease has ended, and
     * completes each with its own request number. The take-over's increment of each payment's epoch has
     * committed (the statement answered) before any channel call; one whose answer never came fails the run,
     * as not the owner.
     */
    Uni<int[]> settleProcessing() {
        String claim = UUID.randomUUID().toString();
        return db.bounded(payments.claimForReconcile(claim, config.reconcile().minAge(), CLAIM_LEASE,
                config.reconcile().giveUpAfter(), BATCH))
                .flatMap(claimed -> {
                    if (claimed.isEmpty()) {
                        return Uni.createFrom().item(new int[] { 0, 0 });
                    }
                    List<Uni<Boolean>> work = new ArrayList<>();
                    for (PaymentRepository.Claimed one : claimed) {
                        work.add(reconcile(one.payment(), one.overdue()));
                    }
                    return Uni.join().all(work).andCollectFailures().map(results -> {
                        int settled = (int) results.stream().filter(Boolean::booleanValue).count();
                        return new int[] { settled, results.size() - settled };
                    });
                });
    }

    /**
     * True when settled; false when postponed. The payment was taken over under the next epoch by the claim,
     * and its executor's phases resume from a query to the channel; a settlement this run made is handed over
     * like a request's answer.
     */
    private Uni<Boolean> reconcile(Payment payment, boolean overdue) {
        return executor.resume(payment, overdue, CLAIM_LEASE, backoff(payment.reconcileAttempts()))
                .flatMap(resumed -> switch (resumed) {
                    case PaymentExecutor.Resumed.Settled settled -> {
                        outcome(payment, settled.settled().byThisCall() ? outcomeOf(settled.word())
                                : Outcome.SETTLED_ELSEWHERE);
                        yield settled.settled().byThisCall() && payment.token() != null
                                ? gate.handOver(payment.merchantId(), payment.token(), settled.settled().response())
                                        .replaceWith(true)
                                : Uni.createFrom().item(true);
                    }
                    case PaymentExecutor.Resumed.Postponed postponed -> {
                        outcome(payment, postponed.word() instanceof ChargeResult.Pending ? Outcome.PENDING
                                : Outcome.UNKNOWN);
                        yield Uni.createFrom().item(false);
                    }
                })
                .onFailure().recoverWithItem(e -> {
                    LOG.warnf("reconciling %s failed, retried after its claim lease: %s", payment.requestNo(), e.toString());
                    outcome(payment, Outcome.UNKNOWN);
                    return false;
                });
    }

    private void outcome(Payment payment, Outcome outcome) {
        outcomes.get(payment.kind()).get(outcome).increment();
    }

    private static Outcome outcomeOf(ChargeResult word) {
        return word instanceof ChargeResult.Succeeded ? Outcome.SUCCEEDED
                : word instanceof ChargeResult.Declined ? Outcome.DECLINED : Outcome.NOT_COMPLETED;
    }

    Uni<Integer> releaseDeadLeases() {
        return db.bounded(tokens.releaseDead(UtcTime.now(), BATCH * 5));
    }

    /** Deletes expired tokens a batch at a time, each batch its own short statement, a bounded number per run. */
    private Uni<Integer> purgeExpired(int batchesDone, int purged) {
        if (batchesDone >= PURGE_BATCHES_PER_RUN) {
            return Uni.createFrom().item(purged);
        }
        return db.bounded(tokens.purgeExpired(UtcTime.now(), PURGE_BATCH)).flatMap(deleted -> deleted < PURGE_BATCH
                ? Uni.createFrom().item(purged + deleted)
                : purgeExpired(batchesDone + 1, purged + deleted));
    }

    private static Duration backoff(int attempts) {
        Duration next = FIRST_BACKOFF.multipliedBy(1L << Math.min(attempts, 10));
        return next.compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : next;
    }
}
