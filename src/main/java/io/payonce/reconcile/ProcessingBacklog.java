package io.payonce.reconcile;

import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.PayOnceConfig;
import io.payonce.database.Database;
import io.payonce.payment.PaymentKind;
import io.payonce.payment.PaymentRepository;
import io.quarkus.runtime.Startup;
import io.quarkus.scheduler.Scheduled;
import io.smallrye.mutiny.Uni;
import org.jboss.logging.Logger;

/**
 * The PROCESSING charges and refunds reconciliation has yet to settle, as gauges by kind, so that an operator is told when
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
    /** Per kind (charges, refunds): PROCESSING, overdue, the oldest's age in microseconds. */
    private final Map<PaymentKind, AtomicLong[]> gauges = new EnumMap<>(PaymentKind.class);

    ProcessingBacklog(PaymentRepository payments, Database db, PayOnceConfig config, MeterRegistry meters) {
        this.payments = payments;
        this.db = db;
        this.giveUpAfter = config.reconcile().giveUpAfter();
        for (PaymentKind kind : PaymentKind.values()) {
            AtomicLong[] measured = { new AtomicLong(), new AtomicLong(), new AtomicLong() };
            gauges.put(kind, measured);
            String tag = kind.name().toLowerCase(Locale.ROOT);
            Gauge.builder("payonce.payments.processing", measured[0], AtomicLong::get)
                    .description("charges or refunds (kind) PROCESSING, waiting for the channel's word")
                    .tag("kind", tag).strongReference(true).register(meters);
            Gauge.builder("payonce.payments.processing.overdue", measured[1], AtomicLong::get)
                    .description("charges or refunds (kind) PROCESSING for longer than"
                            + " payonce.reconcile.give-up-after: reconciliation should have settled or closed them"
                            + " (must stay 0)")
                    .tag("kind", tag).strongReference(true).register(meters);
            Gauge.builder("payonce.payments.processing.oldest", measured[2], micros -> micros.get() / 1e6)
                    .description("age of the oldest PROCESSING charge or refund (kind), 0 when there is none")
                    .baseUnit("seconds")
                    .tag("kind", tag).strongReference(true).register(meters);
        }
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
                .invoke(byKind -> byKind.forEach((kind, backlog) -> {
                    AtomicLong[] measured = gauges.get(kind);
                    measured[0].set(backlog.processing());
                    measured[1].set(backlog.overdue());
                    measured[2].set(backlog.oldestMicros());
                }))
                .replaceWithVoid();
    }
}
