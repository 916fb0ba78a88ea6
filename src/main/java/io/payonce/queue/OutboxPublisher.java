package io.payonce.queue;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.inject.Singleton;

import org.jboss.logging.Logger;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.PayOnceConfig;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Vertx;

/**
 * Sends the {@link Outbox}'s rows, on every instance, each round: claims a batch (a lease, so that two
 * instances never send the same row at once, and a crashed sender's rows are sent by another), publishes it
 * with {@code mandatory} and waits for the broker's confirms, then deletes it; a batch the broker did not
 * confirm is released and sent again, and an answer the broker returned as unroutable (its reply queue gone,
 * or on a node that is down) stays owed and is sent again after a backoff. So an answer is sent at least once after its row committed, whatever
 * crashes between; its reader dedupes by correlation id. Rounds run every {@code payonce.queue.outbox-interval}
 * and whenever an answer was just written; one at a time per instance.
 */
@Singleton
public class OutboxPublisher {

    private static final Logger LOG = Logger.getLogger(OutboxPublisher.class);
    /** Rows sent in one round, one confirm wait for all of them. */
    static final int BATCH = 100;
    /** Long enough for a batch's publish and confirms; a crashed sender's rows wait this long. */
    private static final Duration LEASE = Duration.ofSeconds(30);

    private final Outbox outbox;
    private final Broker broker;
    private final Vertx vertx;
    private final Duration interval;
    private final AtomicBoolean running = new AtomicBoolean();
    private final AtomicBoolean again = new AtomicBoolean();
    private final AtomicLong ready = new AtomicLong();
    private final AtomicLong awaiting = new AtomicLong();
    private final AtomicLong oldestReadyMillis = new AtomicLong();
    private final AtomicLong returned = new AtomicLong();
    private final AtomicLong stranded = new AtomicLong();

    OutboxPublisher(Outbox outbox, Broker broker, Vertx vertx, PayOnceConfig config, MeterRegistry meters) {
        this.outbox = outbox;
        this.broker = broker;
        this.vertx = vertx;
        this.interval = config.queue().outboxInterval();
        Gauge.builder("payonce.queue.outbox.backlog", ready, AtomicLong::get)
                .description("answers written and not yet confirmed by the broker").tag("state", "ready")
                .register(meters);
        Gauge.builder("payonce.queue.outbox.backlog", awaiting, AtomicLong::get)
                .description("answers written and not yet confirmed by the broker").tag("state", "awaiting")
                .register(meters);
        Gauge.builder("payonce.queue.outbox.returned", returned, AtomicLong::get)
                .description("answers the broker returned as unroutable, still owed and sent again after a backoff")
                .register(meters);
        Gauge.builder("payonce.queue.outbox.stranded", stranded, AtomicLong::get)
                .description("answers owed for a token that can never complete (none should ever be)")
                .register(meters);
        Gauge.builder("payonce.queue.outbox.oldest", oldestReadyMillis, millis -> millis.get() / 1000.0)
                .description("age of the oldest answer ready to send").baseUnit("seconds")
                .register(meters);
    }

    /** Rounds on the interval, and the backlog read for the gauges on the same tick (not on every wake). */
    void start() {
        vertx.setPeriodic(Math.max(10, interval.toMillis()), id -> {
            wake();
            outbox.backlog().subscribe().with(this::record,
                    failure -> LOG.debugf("outbox backlog: %s", failure));
        });
    }

    /** A round now, or right after the one under way. */
    void wake() {
        if (!running.compareAndSet(false, true)) {
            again.set(true);
            return;
        }
        round().subscribe().with(more -> finish(more), failure -> {
            LOG.debugf("outbox round: %s", failure);
            finish(false);
        });
    }

    private void finish(boolean more) {
        running.set(false);
        if (more || again.getAndSet(false)) {
            wake();
        }
    }

    /** One round; true when it sent a full batch (there may be more). */
    private Uni<Boolean> round() {
        if (!broker.connected()) {
            return Uni.createFrom().item(false);
        }
        String claim = UUID.randomUUID().toString();
        return outbox.claim(claim, LEASE, BATCH).flatMap(rows -> rows.isEmpty() ? Uni.createFrom().item(false)
                : broker.publish(rows.stream().map(row -> Answers.message(row.answer(), messageId(row))).toList())
                        .flatMap(returned -> outbox.sent(claim, rows.stream()
                                .filter(row -> returned.contains(messageId(row))).map(Outbox.Claimed::id).toList()))
                        .onFailure().call(failure -> {
                            LOG.warnf("queue entrance: %d answers not confirmed by the broker (%s); sending them again",
                                    rows.size(), failure);
                            return outbox.release(claim);
                        })
                        .replaceWith(rows.size() >= BATCH));
    }

    /** An answer's message id: its row, and how often it was sent before, so each send is told apart. */
    private static String messageId(Outbox.Claimed row) {
        return "payonce-answer-" + row.id() + "-" + row.returned();
    }

    private void record(Outbox.Backlog backlog) {
        ready.set(backlog.ready());
        awaiting.set(backlog.awaiting());
        returned.set(backlog.returned());
        stranded.set(backlog.stranded());
        oldestReadyMillis.set(backlog.oldestReady().map(Duration::toMillis).orElse(0L));
    }

}
