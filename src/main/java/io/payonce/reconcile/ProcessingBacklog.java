package io.payonce.reconcile;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.PayOnceConfig;
import io.payonce.database.Database;
import io.payonce.payment.PaymentRepository;
import io.quarkus.runtime.Startup;
import io.quarkus.scheduler.Scheduled;
import io.smallrye.mutiny.Uni;
import org.jboss.logging.Logger;

/**
 * The PROCESSING payments reconciliation has yet to settle, as gauges, so that an operator is told when
 * it cannot keep up. Every instance reads the same table, so each reports the same numbers. When the
 * database does not answer, the gauges keep the last numbers read: a stuck payment stays visible.
 */
@Startup
@ApplicationScoped
public class ProcessingBacklog {

    private static final Logger LOG = Logger.getLogger(ProcessingBacklog.class);

    private final PaymentRepository payments;
    private final Database db;
    private final Duration giveUpAfter;
    private final AtomicLong processing = new AtomicLong();
    private final AtomicLong overdue = new AtomicLong();
    private final AtomicLong oldestMicros = new AtomicLong();

    ProcessingBacklog(PaymentRepository payments, Database db, PayOnceConfig config, MeterRegistry meters) {
        this.payments = payments;
        this.db = db;
        this.giveUpAfter = config.reconcile().giveUpAfter();
        Gauge.builder("payonce.payments.processing", processing, AtomicLong::get)
                .description("payments PROCESSING, waiting for the channel's word")
                .strongReference(true).register(meters);
        Gauge.builder("payonce.payments.processing.overdue", overdue, AtomicLong::get)
                .description("payments PROCESSING for longer than payonce.reconcile.give-up-after:"
                        + " reconciliation should have settled or closed them (must stay 0)")
                .strongReference(true).register(meters);
        Gauge.builder("payonce.payments.processing.oldest", oldestMicros, micros -> micros.get() / 1e6)
                .description("age of the oldest PROCESSING payment, 0 when there is none")
                .baseUnit("seconds")
                .strongReference(true).register(meters);
    }

    /** Measured as often as reconciliation runs, so the gauges are as fresh as the work they judge. */
    @Scheduled(every = "${payonce.reconcile.interval}", delayed = "${payonce.reconcile.interval}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    Uni<Void> scheduled() {
        return measure()
                .onFailure().invoke(e -> LOG.debugf("PROCESSING payments not counted, the gauges keep theirs: %s", e))
                .onFailure().recoverWithNull();
    }

    public Uni<Void> measure() {
        return db.bounded(payments.backlog(giveUpAfter))
                .invoke(backlog -> {
                    processing.set(backlog.processing());
                    overdue.set(backlog.overdue());
                    oldestMicros.set(backlog.oldestMicros());
                })
                .replaceWithVoid();
    }
}
