package io.payonce.reconcile;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.PayOnceConfig;
import io.payonce.channel.ChargeResult;
import io.payonce.channel.PaymentChannel;
import io.payonce.idempotency.RedisFastPath;
import io.payonce.idempotency.TokenRepository;
import io.payonce.mysql.UtcTime;
import io.payonce.payment.Payment;
import io.payonce.payment.PaymentExecutor;
import io.payonce.payment.PaymentRepository;
import io.quarkus.scheduler.Scheduled;
import io.smallrye.mutiny.Uni;

/**
 * The recovery jobs, safe to run on every instance at once: settles payments left PROCESSING by
 * asking the channel with the same request number (never charging), releases tokens whose owner died
 * before any payment record existed, and purges expired tokens in bounded batches.
 */
@ApplicationScoped
public class Reconciler {

    private static final Logger LOG = Logger.getLogger(Reconciler.class);
    private static final int BATCH = 20;
    /** Longer than a batch of channel queries running side by side, each bounded by the channel timeout. */
    private static final Duration CLAIM_LEASE = Duration.ofSeconds(60);
    private static final Duration FIRST_BACKOFF = Duration.ofSeconds(5);
    private static final Duration MAX_BACKOFF = Duration.ofMinutes(5);
    private static final int PURGE_BATCH = 500;
    private static final int PURGE_BATCHES_PER_RUN = 20;

    private final PaymentRepository payments;
    private final TokenRepository tokens;
    private final PaymentExecutor executor;
    private final PaymentChannel channel;
    private final RedisFastPath redis;
    private final PayOnceConfig config;
    private final MeterRegistry meters;

    Reconciler(PaymentRepository payments, TokenRepository tokens, PaymentExecutor executor, PaymentChannel channel,
            RedisFastPath redis, PayOnceConfig config, MeterRegistry meters) {
        this.payments = payments;
        this.tokens = tokens;
        this.executor = executor;
        this.channel = channel;
        this.redis = redis;
        this.config = config;
        this.meters = meters;
    }

    /** What one run did. */
    public record Report(int settled, int postponed, int leasesReleased, int tokensPurged) {
    }

    @Scheduled(every = "${payonce.reconcile.interval}", delayed = "${payonce.reconcile.interval}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    Uni<Void> scheduled() {
        return runOnce()
                .invoke(report -> {
                    if (report.settled() + report.postponed() + report.leasesReleased() + report.tokensPurged() > 0) {
                        LOG.infof("reconciliation: %s", report);
                    }
                })
                .onFailure().invoke(e -> LOG.warnf("reconciliation run failed, next run retries: %s", e.toString()))
                .onFailure().recoverWithNull()
                .replaceWithVoid();
    }

    public Uni<Report> runOnce() {
        return settleProcessing().flatMap(counts -> releaseDeadLeases()
                .flatMap(released -> purgeExpired(0, 0)
                        .map(purged -> new Report(counts[0], counts[1], released, purged))));
    }

    /** Claims a batch of old PROCESSING payments and settles each by a query with its own request number. */
    Uni<int[]> settleProcessing() {
        Instant now = UtcTime.now();
        String claim = UUID.randomUUID().toString();
        return payments.claimForReconcile(claim, now.minus(config.reconcile().minAge()), now.plus(CLAIM_LEASE), now,
                BATCH)
                .flatMap(claimed -> {
                    if (claimed.isEmpty()) {
                        return Uni.createFrom().item(new int[] { 0, 0 });
                    }
                    List<Uni<Boolean>> work = new ArrayList<>();
                    for (Payment payment : claimed) {
                        work.add(reconcile(payment, claim));
                    }
                    return Uni.join().all(work).andCollectFailures().map(results -> {
                        int settled = (int) results.stream().filter(Boolean::booleanValue).count();
                        return new int[] { settled, results.size() - settled };
                    });
                });
    }

    /** True when settled; false when postponed because the channel still cannot tell. */
    private Uni<Boolean> reconcile(Payment payment, String claim) {
        return channel.query(payment.merchantId(), payment.requestNo()).flatMap(told -> {
            if (told instanceof ChargeResult.Unknown || told instanceof ChargeResult.NotAccepted) {
                meters.counter("payonce.reconcile.outcomes", "outcome", "unknown").increment();
                return payments.postpone(payment.id(), claim, UtcTime.now().plus(backoff(payment.reconcileAttempts())))
                        .replaceWith(false);
            }
            String outcome = told instanceof ChargeResult.Succeeded ? "succeeded"
                    : told instanceof ChargeResult.NotFound ? "not_found" : "declined";
            return executor.settleReconciled(payment, told).flatMap(executed -> {
                meters.counter("payonce.reconcile.outcomes", "outcome", executed == null ? "settled_elsewhere" : outcome)
                        .increment();
                if (executed == null || payment.token() == null) {
                    return Uni.createFrom().item(true);
                }
                // wake the duplicates waiting for this token, on every instance
                return tokens.find(payment.merchantId(), payment.token()).flatMap(token -> token == null
                        ? Uni.createFrom().voidItem()
                        : redis.finished(payment.merchantId(), payment.token(), token.fingerprint(), executed.response(),
                                token.expiresAt()))
                        .replaceWith(true);
            });
        }).onFailure().recoverWithUni(e -> {
            LOG.warnf("reconciling %s failed, retried later: %s", payment.requestNo(), e.toString());
            return payments.postpone(payment.id(), claim, UtcTime.now().plus(backoff(payment.reconcileAttempts())))
                    .onFailure().recoverWithItem(false)
                    .replaceWith(false);
        });
    }

    Uni<Integer> releaseDeadLeases() {
        return tokens.releaseDead(UtcTime.now(), BATCH * 5);
    }

    /** Deletes expired tokens a batch at a time, each batch its own short statement, a bounded number per run. */
    private Uni<Integer> purgeExpired(int batchesDone, int purged) {
        if (batchesDone >= PURGE_BATCHES_PER_RUN) {
            return Uni.createFrom().item(purged);
        }
        return tokens.purgeExpired(UtcTime.now(), PURGE_BATCH).flatMap(deleted -> deleted < PURGE_BATCH
                ? Uni.createFrom().item(purged + deleted)
                : purgeExpired(batchesDone + 1, purged + deleted));
    }

    private static Duration backoff(int attempts) {
        Duration next = FIRST_BACKOFF.multipliedBy(1L << Math.min(attempts, 10));
        return next.compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : next;
    }
}
