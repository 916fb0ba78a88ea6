package io.payonce.queue;

import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.ws.rs.core.Response;

import org.jboss.logging.Logger;

import com.rabbitmq.client.AMQP;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.PayOnceConfig;
import io.payonce.PayOnceConfig.Queue.MerchantFrom;
import io.payonce.api.Identifiers;
import io.payonce.api.InvalidRequestException;
import io.payonce.api.MerchantRequiredException;
import io.payonce.api.PayCommands;
import io.payonce.api.ProblemMapper;
import io.payonce.idempotency.Reply;
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
 * after is one path for both. A delivery is acknowledged once its answer is a row of the {@link Outbox}, never
 * before:
 * <ul>
 * <li>an answer of the gate (200, 402, 404, 409, 422, a replay): owed to {@code reply_to}, acknowledged;</li>
 * <li>202: the 202 owed now and the settled answer once the token holds it, acknowledged;</li>
 * <li>a passing failure (503, or a first execution that outlasted the wait): held for the retry delay and
 * returned to the queue, up to {@code payonce.queue.retries} deliveries, then answered 503 and
 * dead-lettered;</li>
 * <li>a command that can never get a stored answer (malformed, no key, no or unauthenticated merchant, a key
 * reused for other parameters): answered with its problem and dead-lettered to {@link Topology#DEAD}.</li>
 * </ul>
 * Where its answer cannot be made durable (the database unreachable), a delivery is returned to the queue
 * after the retry delay, answered by none.
 */
@ApplicationScoped
public class QueueEntrance {

    private static final Logger LOG = Logger.getLogger(QueueEntrance.class);
    static final String IDEMPOTENCY_KEY = "idempotency-key";
    static final String MERCHANT_ID = "merchant-id";
    /** What a producer might think names the merchant in a body; refused rather than ignored. */
    static final String BODY_MERCHANT = "merchant_id";

    /** What became of one delivery. */
    enum Outcome {
        ANSWERED, INTERIM, RETRIED, DEAD_LETTERED, REQUEUED
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
    private final OutboxPublisher publisher;
    private final Vertx vertx;
    private final Duration waitBound;
    private final Set<String> trustedUsers;
    private final Map<CommandQueue, Map<Outcome, Counter>> outcomes = new EnumMap<>(CommandQueue.class);
    private final Map<CommandQueue, Counter> redeliveries = new EnumMap<>(CommandQueue.class);

    QueueEntrance(PayOnceConfig config, Broker broker, PayCommands commands, PayService pay, RefundService refunds,
            ProblemMapper problems, Outbox outbox, OutboxPublisher publisher, Vertx vertx, MeterRegistry meters) {
        this.settings = config.queue();
        this.broker = broker;
        this.commands = commands;
        this.pay = pay;
        this.refunds = refunds;
        this.problems = problems;
        this.outbox = outbox;
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
                    LOG.warnf("queue entrance: a command's answer could not be stored (%s); it is delivered again "
                            + "in %d ms", failure, settings.retryDelay().toMillis());
                    later(delivery::requeue);
                    counted.get(Outcome.REQUEUED).increment();
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
            return deadLetter(delivery, problems.answer(refused));
        }
        return command.run().get()
                .onItem().transformToUni(reply -> answered(delivery, command, reply))
                .onFailure().recoverWithUni(failure -> failed(delivery, problems.answer(failure)));
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

    private Uni<Outcome> answered(Delivery delivery, Command command, Reply reply) {
        String replyTo = replyTo(delivery);
        if (replyTo == null) {
            delivery.ack();
            return Uni.createFrom().item(Outcome.ANSWERED);
        }
        int status = reply.response().status();
        Outbox.Answer answer = Outbox.Answer.of(replyTo, delivery.properties().getCorrelationId(), status,
                reply.replayed(), reply.response().body());
        boolean interim = status == 202;
        return (interim ? outbox.oweInterim(command.merchantId(), command.token(), answer)
                : outbox.owe(command.merchantId(), command.token(), answer))
                .invoke(() -> {
                    delivery.ack();
                    publisher.wake();
                })
                .replaceWith(interim ? Outcome.INTERIM : Outcome.ANSWERED);
    }

    /** A refusal of the gate: a passing one is retried, any other is the command's end. */
    private Uni<Outcome> failed(Delivery delivery, Response refusal) {
        boolean passing = refusal.getStatus() == 503 || (refusal.getStatus() == 409 && refusal.getHeaderString(
                "Retry-After") != null);
        if (!passing || delivery.earlierDeliveries() >= settings.retries()) {
            return deadLetter(delivery, refusal);
        }
        later(delivery::requeue);
        return Uni.createFrom().item(Outcome.RETRIED);
    }

    /** Answers the refusal (when the command names a reply queue), then dead-letters the delivery. */
    private Uni<Outcome> deadLetter(Delivery delivery, Response refusal) {
        String replyTo = replyTo(delivery);
        Uni<Void> owed = Uni.createFrom().voidItem();
        if (replyTo != null) {
            String body = String.valueOf(refusal.getEntity());
            owed = outbox.owe(null, null, Outbox.Answer.of(replyTo, delivery.properties().getCorrelationId(),
                    refusal.getStatus(), false, body));
        }
        return owed.invoke(() -> {
            delivery.deadLetter();
            publisher.wake();
        }).replaceWith(Outcome.DEAD_LETTERED);
    }

    private static String replyTo(Delivery delivery) {
        AMQP.BasicProperties properties = delivery.properties();
        String replyTo = properties.getReplyTo();
        return replyTo == null || replyTo.isBlank() ? null : replyTo;
    }

    private void later(Runnable action) {
        vertx.setTimer(Math.max(1, settings.retryDelay().toMillis()), id -> action.run());
    }
}
