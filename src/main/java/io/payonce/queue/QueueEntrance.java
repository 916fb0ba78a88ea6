package io.payonce.queue;

import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.jboss.logging.Logger;

import com.rabbitmq.client.AMQP;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.PayOnceConfig;
import io.payonce.PayOnceConfig.Queue.MerchantFrom;
import io.payonce.api.Identifiers;
import io.payonce.api.InvalidRequestException;
import io.payonce.api.MerchantRequiredException;
import io.payonce.api.PayCommands;
import io.payonce.api.ProblemMapper;
import io.payonce.idempotency.Reply;
import io.payonce.idempotency.TemporarilyUnavailableException;
import io.payonce.payment.PayCommand;
import io.payonce.payment.PayService;
import io.payonce.queue.Topology.CommandQueue;
import io.payonce.refund.RefundCommand;
import io.payonce.refund.RefundService;
import io.quarkus.runtime.ShutdownDelayInitiatedEvent;
import io.quarkus.runtime.StartupEvent;
import io.smallrye.common.vertx.VertxContext;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Context;
import io.vertx.core.Vertx;

/**
 * Pay commands from {@link Topology#PAY} and refund commands from {@link Topology#REFUNDS}, each through the
 * same gate as its HTTP endpoint ({@code POST /pay}, {@code POST /refunds}): read by the same rules
 * ({@link PayCommands}), run by the same service ({@link PayService}, {@link RefundService}; a copy waits for a
 * first execution still running, on any instance, whatever entrance it came by), answered with what an HTTP
 * client would get. The queue a delivery came from decides only which reader and which service; everything
 * after is one path for both, and what becomes of the delivery is decided by one table, {@link Fate}, over the
 * kind of its answer: a final answer is owed to {@code reply_to} (a row of the {@link Outbox}) and the
 * delivery acknowledged; a 202 or a retryable refusal is acknowledged only once a durable record owes the final
 * answer (then published when settled, whoever settles it), else held and returned to run again; a command
 * that can never run as sent is answered with its problem and dead-lettered. A delivery whose answer cannot be
 * made durable (the database unreachable) is held and returned to its queue, answered by none.
 */
@ApplicationScoped
public class QueueEntrance {

    private static final Logger LOG = Logger.getLogger(QueueEntrance.class);
    static final String IDEMPOTENCY_KEY = "idempotency-key";
    static final String MERCHANT_ID = "merchant-id";
    /** What a producer might think names the merchant in a body; refused rather than ignored. */
    static final String BODY_MERCHANT = "merchant_id";

    /** What became of one delivery, as the {@code outcome} tag of its counter. */
    enum Outcome {
        /** Its final answer owed, acknowledged. */
        ANSWERED,
        /** Its answer owed by a record that recovery settles, acknowledged. */
        OWED,
        /** Held, then returned to its queue to run again. */
        HELD,
        /** Never executed: answered with its problem and dead-lettered. */
        DEAD_LETTERED
    }

    /** A command as its queue's reader made it: whose, under which key, and its run through the gate. */
    private record Command(String merchantId, String token, Supplier<Uni<Reply>> run) {
    }

    private final PayOnceConfig.Queue settings;
    private final Broker broker;
    private final PayCommands commands;
    private final PayService pay;
    private final RefundService refunds;
    private final ProblemMapper problems;
    private final Outbox outbox;
    private final CommandAttempts attempts;
    private final OutboxPublisher publisher;
    private final Vertx vertx;
    private final Duration waitBound;
    private final Set<String> trustedUsers;
    private final Map<CommandQueue, Map<Outcome, Counter>> outcomes = new EnumMap<>(CommandQueue.class);
    private final Map<CommandQueue, Counter> redeliveries = new EnumMap<>(CommandQueue.class);
    private final AtomicInteger held = new AtomicInteger();

    QueueEntrance(PayOnceConfig config, Broker broker, PayCommands commands, PayService pay, RefundService refunds,
            ProblemMapper problems, Outbox outbox, CommandAttempts attempts, OutboxPublisher publisher, Vertx vertx,
            MeterRegistry meters) {
        this.settings = config.queue();
        this.broker = broker;
        this.commands = commands;
        this.pay = pay;
        this.refunds = refunds;
        this.problems = problems;
        this.outbox = outbox;
        this.attempts = attempts;
        this.publisher = publisher;
        this.vertx = vertx;
        this.waitBound = config.idempotency().waitTimeout();
        this.trustedUsers = Set.copyOf(settings.trustedUsers().orElse(List.of()));
        for (CommandQueue queue : CommandQueue.values()) {
            Map<Outcome, Counter> ofQueue = new EnumMap<>(Outcome.class);
            for (Outcome outcome : Outcome.values()) {
                ofQueue.put(outcome, Counter.builder("payonce.queue.deliveries")
                        .description("deliveries of commands, by queue and by what became of them")
                        .tag("queue", queue.name)
                        .tag("outcome", outcome.name().toLowerCase())
                        .register(meters));
            }
            outcomes.put(queue, ofQueue);
            redeliveries.put(queue, Counter.builder("payonce.queue.redeliveries")
                    .description("deliveries the broker marked as delivered before (after a crash, a cut or a retry)")
                    .tag("queue", queue.name)
                    .register(meters));
        }
        Gauge.builder("payonce.queue.held", held, AtomicInteger::get)
                .description("deliveries held on this instance before they return to their queue to run again")
                .strongReference(true).register(meters);
    }

    void start(@Observes StartupEvent started) {
        if (settings.enabled()) {
            publisher.start();
            broker.start(this::accept);
        }
    }

    /** A stopping instance takes no more commands; those it holds finish and are acknowledged. */
    void stop(@Observes ShutdownDelayInitiatedEvent stopping) {
        if (settings.enabled()) {
            broker.stopConsuming();
        }
    }

    /** On the client's consumer thread: the delivery is handled on a Vert.x context of its own. */
    void accept(Delivery delivery) {
        if (delivery.redelivered()) {
            redeliveries.get(delivery.queue()).increment();
        }
        Map<Outcome, Counter> counted = outcomes.get(delivery.queue());
        Context context = VertxContext.createNewDuplicatedContext(vertx.getOrCreateContext());
        context.runOnContext(start -> handle(delivery).subscribe().with(
                outcome -> counted.get(outcome).increment(),
                failure -> {
                    LOG.warnf("queue entrance: a command could not be settled (%s); it is delivered again in %d ms",
                            failure, settings.hold().toMillis());
                    hold(delivery);
                    counted.get(Outcome.HELD).increment();
                }));
    }

    private Uni<Outcome> handle(Delivery delivery) {
        Command command;
        try {
            String merchant = merchantOf(delivery);
            if (Answers.namesMember(delivery.body(), BODY_MERCHANT)) {
                throw new InvalidRequestException("invalid_request", "a command's merchant is its user_id (or a"
                        + " trusted producer's merchant-id header), never a body field: remove " + BODY_MERCHANT);
            }
            command = read(delivery, merchant);
        } catch (RuntimeException refused) {
            // never read, so never run: nothing it could be answered later
            return deadLetter(delivery, null, problems.answer(refused));
        }
        return admit(delivery, command).flatMap(fate -> switch (fate) {
            case RUN -> command.run().get()
                    .onFailure().recoverWithItem(problems::answer)
                    .flatMap(reply -> settle(delivery, command, reply));
            case DEAD_LETTER -> deadLetter(delivery, command, problems.answer(abandoned(delivery)));
            default -> Uni.createFrom().item(hold(delivery));
        });
    }

    /** Why a command that never executed is given up past its retries: nothing was charged, or refunded. */
    private TemporarilyUnavailableException abandoned(Delivery delivery) {
        TemporarilyUnavailableException abandoned = new TemporarilyUnavailableException(
                "the command was delivered more than " + settings.retries() + " times without completing", null);
        return delivery.queue() == CommandQueue.REFUNDS ? abandoned.ofRefund() : abandoned;
    }

    /** A first delivery runs; a redelivery is counted first, and may be one too many ({@link Fate#redelivered}). */
    private Uni<Fate> admit(Delivery delivery, Command command) {
        if (!delivery.redelivered()) {
            return Uni.createFrom().item(Fate.RUN);
        }
        return attempts.count(command.merchantId(), command.token())
                .flatMap(count -> count <= settings.retries() ? Uni.createFrom().item(Fate.RUN)
                        : attempts.neverExecuted(command.merchantId(), command.token())
                                .map(never -> Fate.redelivered(count, settings.retries(), never)))
                .onFailure().recoverWithItem(failure -> {
                    LOG.debugf("queue entrance: a redelivery could not be counted (%s)", failure);
                    return Fate.uncounted();
                });
    }

    /** The command by its queue's rules, those of its HTTP endpoint; fails as that endpoint's reading does. */
    private Command read(Delivery delivery, String merchant) {
        String key = delivery.header(IDEMPOTENCY_KEY);
        String contentType = delivery.properties().getContentType();
        return switch (delivery.queue()) {
            case PAY -> {
                PayCommand command = commands.read(merchant, key, contentType, delivery.body());
                yield new Command(command.merchantId(), command.token(), () -> pay.pay(command, waitBound, false));
            }
            case REFUNDS -> {
                RefundCommand command = commands.readRefund(merchant, key, contentType, delivery.body());
                yield new Command(command.merchantId(), command.token(), () -> refunds.refund(command, waitBound));
            }
        };
    }

    /**
     * The merchant the broker vouches for: the validated {@code user_id}; or, with {@code merchant-from=header},
     * the {@code merchant-id} header of a trusted user's message. A header naming a merchant is refused from
     * anyone else, so that no producer can pay as another merchant.
     */
    private String merchantOf(Delivery delivery) {
        String user = delivery.properties().getUserId();
        String header = delivery.header(MERCHANT_ID);
        String merchant;
        if (settings.merchantFrom() == MerchantFrom.HEADER && user != null && trustedUsers.contains(user)) {
            merchant = header;
        } else if (header != null && !header.equals(user)) {
            throw new MerchantRequiredException("the merchant-id header is accepted only from trusted broker users");
        } else {
            merchant = user;
        }
        if (merchant == null || !Identifiers.valid(merchant)) {
            throw new MerchantRequiredException("the command must be published with user_id naming its merchant"
                    + " (validated by the broker)");
        }
        return merchant;
    }

    /**
     * Settles the delivery by its answer's {@link Fate}: the answer owed and the delivery acknowledged, held, or
     * dead-lettered.
     */
    private Uni<Outcome> settle(Delivery delivery, Command command, Reply reply) {
        Outbox.Answer answer = answerOf(delivery, reply);
        return switch (Fate.of(reply.kind())) {
            case ANSWER -> (answer == null ? Uni.createFrom().voidItem() : outbox.owe(command.merchantId(),
                    command.token(), answer))
                    .map(owed -> Fate.ACKNOWLEDGE)
                    .onFailure().recoverWithItem(failure -> unwritten(failure))
                    .flatMap(fate -> finish(delivery, command, fate, Outcome.ANSWERED));
            case OWE -> outbox.oweOnceRecorded(command.merchantId(), command.token(), answer)
                    .map(Fate::owing)
                    .onFailure().recoverWithItem(failure -> unwritten(failure))
                    .flatMap(fate -> finish(delivery, command, fate, Outcome.OWED));
            case DEAD_LETTER -> deadLetter(delivery, command, reply);
            default -> throw new IllegalStateException("no fate " + Fate.of(reply.kind()) + " for an answer");
        };
    }

    private static Fate unwritten(Throwable failure) {
        LOG.warnf("queue entrance: a command's answer could not be stored (%s); it runs again", failure);
        return Fate.unwritten();
    }

    /** Acknowledged (its count forgotten), or held. */
    private Uni<Outcome> finish(Delivery delivery, Command command, Fate fate, Outcome acknowledged) {
        if (fate != Fate.ACKNOWLEDGE) {
            return Uni.createFrom().item(hold(delivery));
        }
        delivery.ack();
        publisher.wake();
        return forget(delivery, command).replaceWith(acknowledged);
    }

    /**
     * Answers {@code refusal} straight to {@code reply_to} (a message of its own, confirmed by the broker, no
     * database needed), then dead-letters the delivery; held when the answer cannot be sent.
     */
    private Uni<Outcome> deadLetter(Delivery delivery, Command command, Reply refusal) {
        Outbox.Answer answer = answerOf(delivery, refusal);
        Uni<Set<String>> answered = answer == null ? Uni.createFrom().item(Set.of())
                : broker.publish(List.of(Answers.message(answer, "payonce-refusal-" + UUID.randomUUID())));
        return answered
                .invoke(returned -> delivery.deadLetter())
                .flatMap(returned -> forget(delivery, command))
                .replaceWith(Outcome.DEAD_LETTERED)
                .onFailure().recoverWithItem(failure -> {
                    LOG.warnf("queue entrance: a refused command's answer could not be sent (%s); it runs again", failure);
                    return hold(delivery);
                });
    }

    /** A redelivered command's count, gone once it is settled (best effort: a count left over only waits). */
    private Uni<Void> forget(Delivery delivery, Command command) {
        if (command == null || !delivery.redelivered()) {
            return Uni.createFrom().voidItem();
        }
        return attempts.forget(command.merchantId(), command.token()).onFailure().recoverWithNull();
    }

    /** The answer as the outbox keeps it, or null when the command names no reply queue. */
    private static Outbox.Answer answerOf(Delivery delivery, Reply reply) {
        String replyTo = replyTo(delivery);
        return replyTo == null ? null : Outbox.Answer.of(replyTo, delivery.properties().getCorrelationId(),
                reply.status(), reply.replayed(), reply.isFinal(), reply.response().body());
    }

    private static String replyTo(Delivery delivery) {
        AMQP.BasicProperties properties = delivery.properties();
        String replyTo = properties.getReplyTo();
        return replyTo == null || replyTo.isBlank() ? null : replyTo;
    }

    /** Holds the delivery for {@code payonce.queue.hold}, then returns it to its queue. */
    private Outcome hold(Delivery delivery) {
        held.incrementAndGet();
        vertx.setTimer(Math.max(1, settings.hold().toMillis()), id -> {
            held.decrementAndGet();
            delivery.requeue();
        });
        return Outcome.HELD;
    }
}
