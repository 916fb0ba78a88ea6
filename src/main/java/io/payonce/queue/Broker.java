package io.payonce.queue;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Address;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.RecoveryListener;
import com.rabbitmq.client.Return;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.PayOnceConfig;
import io.smallrye.mutiny.Uni;

/**
 * The entrance's connection to RabbitMQ, with the RabbitMQ Java client that quarkus-messaging-rabbitmq
 * brings, not its SmallRye connector: the connector neither publishes with {@code mandatory} on the default
 * exchange (the contract's replies) nor resumes consuming after a killed connection (smallrye-reactive-messaging
 * #1906) nor declares its queues again after a broker restart (#1593). The client's automatic recovery
 * reconnects, re-opens the channels and re-registers the consumer; the queues are declared again after each
 * recovery as well. A broker unreachable at start is tried again every {@link #RECONNECT} until it answers:
 * the HTTP entrance never waits for it.
 *
 * <p>Every blocking call (connecting, publishing and waiting for the broker's confirms) runs on the one
 * thread this class owns, so the publishing channel is only ever used by that thread.
 */
@Singleton
public class Broker {

    private static final Logger LOG = Logger.getLogger(Broker.class);
    static final Duration RECONNECT = Duration.ofSeconds(2);
    /** After the broker closed the consuming channel: soon, but not in a loop with a channel error that repeats. */
    private static final Duration RECONSUME = Duration.ofMillis(200);

    /** A message to publish to the default exchange; its properties carry a message id unique to it. */
    record Outgoing(String routingKey, AMQP.BasicProperties properties, byte[] body) {
    }

    private final PayOnceConfig.Queue settings;
    private final ConnectionFactory factory;
    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "payonce-broker");
        t.setDaemon(true);
        return t;
    });
    private final Counter unroutable;
    /** The nodes to connect to, tried in turn: a cluster's, or the one of rabbitmq-host and rabbitmq-port. */
    private final List<Address> addresses;
    /** Message ids of the answers the broker returned as unroutable; read on {@link #thread} after a confirm wait. */
    private final Set<String> returnedIds = ConcurrentHashMap.newKeySet();
    private volatile Connection connection;
    private volatile Channel consuming;
    private volatile List<String> consumerTags = List.of();
    /** Used on {@link #thread} only. */
    private Channel publishing;
    private volatile boolean closed;
    /** Set once consumption is stopped for a shutdown: the consumers are not opened again. */
    private volatile boolean stopped;
    private final AtomicBoolean reconsuming = new AtomicBoolean();
    private final Counter reopened;
    /** Given each delivery of a command, on the client's consumer thread. */
    private Consumer<Delivery> handler;

    Broker(PayOnceConfig config, MeterRegistry meters,
            @ConfigProperty(name = "rabbitmq-host", defaultValue = "localhost") String host,
            @ConfigProperty(name = "rabbitmq-port", defaultValue = "5672") int port,
            @ConfigProperty(name = "rabbitmq-username", defaultValue = "guest") String username,
            @ConfigProperty(name = "rabbitmq-password", defaultValue = "guest") String password,
            @ConfigProperty(name = "rabbitmq-virtual-host", defaultValue = "/") String virtualHost,
            @ConfigProperty(name = "rabbitmq-addresses") Optional<String> addresses) {
        this.settings = config.queue();
        this.factory = new ConnectionFactory();
        this.addresses = addresses.filter(list -> !list.isBlank())
                .map(list -> List.of(Address.parseAddresses(list)))
                .orElse(List.of(new Address(host, port)));
        factory.setHost(host);
        factory.setPort(port);
        factory.setUsername(username);
        factory.setPassword(password);
        factory.setVirtualHost(virtualHost);
        factory.setAutomaticRecoveryEnabled(true);
        factory.setTopologyRecoveryEnabled(true);
        factory.setNetworkRecoveryInterval(RECONNECT.toMillis());
        factory.setConnectionTimeout((int) settings.confirmTimeout().toMillis());
        factory.setRequestedHeartbeat(10);
        this.unroutable = Counter.builder("payonce.queue.replies.unroutable")
                .description("answers the broker could not route to their reply_to (returned as mandatory); each "
                        + "stays owed and is sent again")
                .register(meters);
        this.reopened = Counter.builder("payonce.queue.consumer.reopened")
                .description("times the broker closed the consuming channel or cancelled a consumer and the entrance "
                        + "consumed again")
                .register(meters);
    }

    /**
     * Connects (now, and again until the broker answers) and consumes every {@link Topology.CommandQueue} with
     * {@code handler}, each queue with {@code payonce.queue.prefetch} deliveries in progress.
     */
    void start(Consumer<Delivery> handler) {
        this.handler = handler;
        thread.execute(this::connect);
    }

    /** True while the connection is open: commands are taken and answers sent. */
    public boolean connected() {
        Connection c = connection;
        return c != null && c.isOpen();
    }

    /**
     * Publishes {@code messages} to the default exchange with {@code mandatory} (the broker returns what no
     * queue takes, rather than dropping it) and waits for the broker's confirms: answers the message ids the
     * broker returned as unroutable (counted and logged; their answers are still owed), once every other one
     * is taken; fails when not connected, on a negative confirm, or when the confirms do not arrive within
     * the confirm timeout. The broker sends a message's return before its confirm, on the connection's one
     * reading thread, so every return of the batch has been seen once the confirms are in.
     */
    Uni<Set<String>> publish(List<Outgoing> messages) {
        return Uni.createFrom().emitter(emitter -> thread.execute(() -> {
            try {
                Channel channel = publishing;
                if (channel == null || !channel.isOpen() || !connected()) {
                    throw new IOException("not connected to the broker");
                }
                returnedIds.clear();
                for (Outgoing message : messages) {
                    channel.basicPublish("", message.routingKey(), true, message.properties(), message.body());
                }
                if (!channel.waitForConfirms(settings.confirmTimeout().toMillis())) {
                    throw new IOException("the broker refused a publish (negative confirm)");
                }
                Set<String> returned = Set.copyOf(returnedIds);
                returnedIds.clear();
                emitter.complete(returned);
            } catch (IOException | TimeoutException | InterruptedException | RuntimeException e) {
                emitter.fail(e);
            }
        }));
    }

    /** Stops taking commands (those taken finish); the connection stays for their answers. */
    void stopConsuming() {
        thread.execute(() -> {
            stopped = true;
            Channel channel = consuming;
            if (channel == null || !channel.isOpen()) {
                return;
            }
            for (String tag : consumerTags) {
                try {
                    channel.basicCancel(tag);
                } catch (IOException | RuntimeException e) {
                    LOG.debugf("cancelling the consumer %s: %s", tag, e);
                }
            }
        });
    }

    @PreDestroy
    void close() {
        closed = true;
        thread.execute(() -> {
            Connection c = connection;
            if (c != null) {
                try {
                    c.close((int) settings.confirmTimeout().toMillis());
                } catch (IOException | RuntimeException e) {
                    LOG.debugf("closing the broker connection: %s", e);
                }
            }
        });
        thread.shutdown();
        try {
            thread.awaitTermination(settings.confirmTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void connect() {
        if (closed || connected()) {
            return;
        }
        Connection opened = null;
        try {
            opened = factory.newConnection(addresses, "payonce");
            declare(opened);
            Channel forPublishing = opened.createChannel();
            forPublishing.confirmSelect();
            forPublishing.addReturnListener(this::returned);
            publishing = forPublishing;
            connection = opened;
            consume(opened);
            ((Recoverable) opened).addRecoveryListener(new Redeclare(opened));
            LOG.infof("queue entrance: consuming %s on %s", queueNames(), opened.getAddress());
        } catch (IOException | TimeoutException | RuntimeException e) {
            LOG.warnf("queue entrance: the broker at %s is not reachable (%s); trying again in %d s", addresses, e,
                    RECONNECT.toSeconds());
            connection = null;
            closeQuietly(opened);
            if (!closed) {
                thread.schedule(this::connect, RECONNECT.toMillis(), TimeUnit.MILLISECONDS);
            }
        }
    }

    /** The queues, with the arguments this broker's version takes. */
    private static void declare(Connection on) throws IOException, TimeoutException {
        Object version = on.getServerProperties().get("version");
        try (Channel declaring = on.createChannel()) {
            Topology.declare(declaring, version == null ? "" : version.toString());
        }
    }

    /**
     * A channel of its own consuming every command queue, each consumer with {@code payonce.queue.prefetch}
     * deliveries in progress. The client's recovery reopens it with its connection; a channel the broker
     * closes alone (a channel-level error, while the connection stays up) or a consumer it cancels (its
     * queue deleted) is opened or consumed again here, so that consumption never stops while
     * {@link #connected()} says true.
     */
    private void consume(Connection on) throws IOException {
        Channel forConsuming = on.createChannel();
        // per consumer: quorum queues know no prefetch shared by a channel's consumers
        forConsuming.basicQos(settings.prefetch());
        List<String> tags = new ArrayList<>();
        for (Topology.CommandQueue queue : Topology.CommandQueue.values()) {
            tags.add(forConsuming.basicConsume(queue.name, false, new CommandConsumer(forConsuming, queue, handler,
                    this::scheduleConsumeAgain)));
        }
        forConsuming.addShutdownListener(cause -> {
            if (!cause.isHardError() && !cause.isInitiatedByApplication() && !closed) {
                LOG.warnf("queue entrance: the broker closed the consuming channel (%s); consuming again",
                        cause.getMessage());
                scheduleConsumeAgain();
            }
        });
        consumerTags = List.copyOf(tags);
        consuming = forConsuming;
    }

    /** One new consuming channel for any number of closures and cancellations seen meanwhile. */
    private void scheduleConsumeAgain() {
        if (reconsuming.compareAndSet(false, true)) {
            thread.schedule(this::consumeAgain, RECONSUME.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** After the broker closed the consuming channel or cancelled a consumer: the queues again, then consumers. */
    private void consumeAgain() {
        reconsuming.set(false);
        Connection c = connection;
        if (closed || c == null || !c.isOpen() || stopped) {
            return;
        }
        Channel old = consuming;
        try {
            if (old != null && old.isOpen()) {
                old.abort();
            }
            declare(c);
            consume(c);
            reopened.increment();
        } catch (IOException | TimeoutException | RuntimeException e) {
            LOG.warnf("queue entrance: consuming again failed (%s); trying again in %d s", e, RECONNECT.toSeconds());
            scheduleConsumeAgain();
        }
    }

    private void returned(Return returned) {
        unroutable.increment();
        if (returned.getProperties().getMessageId() != null) {
            returnedIds.add(returned.getProperties().getMessageId());
        }
        LOG.warnf("queue entrance: an answer could not be routed to reply_to %s (%d %s); it stays owed and is sent "
                + "again", returned.getRoutingKey(), returned.getReplyCode(), returned.getReplyText());
    }

    private static List<String> queueNames() {
        return Arrays.stream(Topology.CommandQueue.values()).map(queue -> queue.name).toList();
    }

    private static void closeQuietly(Connection c) {
        if (c != null) {
            try {
                c.abort();
            } catch (RuntimeException ignored) {
                // nothing more to do with a connection that failed to open
            }
        }
    }

    /** After the client recovered the connection: the queues again (a restarted broker may have lost them). */
    private final class Redeclare implements RecoveryListener {

        private final Connection recovered;

        Redeclare(Connection recovered) {
            this.recovered = recovered;
        }

        @Override
        public void handleRecovery(Recoverable recoverable) {
            LOG.infof("queue entrance: connection to the broker recovered; consuming %s again", queueNames());
            thread.execute(() -> {
                try {
                    declare(recovered);
                } catch (IOException | TimeoutException | RuntimeException e) {
                    LOG.warnf("queue entrance: declaring the queues after recovery failed: %s", e);
                }
            });
        }

        @Override
        public void handleRecoveryStarted(Recoverable recoverable) {
            LOG.warnf("queue entrance: connection to the broker lost; recovering");
        }
    }

    /** Hands each delivery of one command queue to the entrance, saying which queue it came from. */
    private static final class CommandConsumer extends DefaultConsumer {

        private final Topology.CommandQueue queue;
        private final Consumer<Delivery> handler;
        private final Runnable onCancel;

        CommandConsumer(Channel channel, Topology.CommandQueue queue, Consumer<Delivery> handler, Runnable onCancel) {
            super(channel);
            this.queue = queue;
            this.handler = handler;
            this.onCancel = onCancel;
        }

        /** The broker cancelled this consumer (its queue was deleted, or failed over without it): consume again. */
        @Override
        public void handleCancel(String consumerTag) {
            LOG.warnf("queue entrance: the broker cancelled the consumer of %s; consuming again", queue.name);
            onCancel.run();
        }

        @Override
        public void handleDelivery(String consumerTag, Envelope envelope, AMQP.BasicProperties properties,
                byte[] body) {
            handler.accept(new Delivery(queue, getChannel(), envelope.getDeliveryTag(), envelope.isRedeliver(),
                    properties, body));
        }
    }
}
