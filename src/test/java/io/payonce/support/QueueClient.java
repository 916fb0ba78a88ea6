package io.payonce.support;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.Method;
import com.rabbitmq.client.Return;
import com.rabbitmq.client.ShutdownSignalException;

/**
 * A merchant's producer on the queue entrance and the reader of its answers, as a test drives them: one
 * connection as one broker user (so the broker validates the {@code user_id} it publishes), an exclusive,
 * auto-deleted, server-named reply queue, and commands published to the default exchange as CONTRACT
 * section 9 describes them. Every publish waits for the broker's confirm (bounded by {@link #CONFIRM_BOUND})
 * and is mandatory, so a command the broker refuses (a forged {@code user_id}) or cannot route (no such
 * queue yet) fails the send with {@link PublishRefused} instead of vanishing. Answers are collected by
 * {@code correlation_id} as they arrive, each acknowledged once collected. The connection does not recover
 * by itself: a test that cuts the broker sees it closed ({@link #isOpen}) and connects again, or
 * {@link #resume}s: the reply queue is durable, so the answers that came meanwhile wait in it.
 */
public final class QueueClient implements AutoCloseable {

    /** A confirm comes within milliseconds; a quorum queue's on a loaded machine within a second or two. */
    public static final Duration CONFIRM_BOUND = Duration.ofSeconds(10);
    public static final String IDEMPOTENCY_KEY = "idempotency-key";
    public static final String JSON = "application/json";
    private static final int PERSISTENT = 2;
    /** Connecting to a loopback broker is immediate; a broker that does not answer in this long is down. */
    private static final int CONNECT_TIMEOUT_MS = 5_000;
    /** Bounds every synchronous call to the broker (declare, get, close), the client's default being minutes. */
    private static final int RPC_TIMEOUT_MS = 10_000;
    /** Key of answers published with no {@code correlation_id}. */
    public static final String NO_CORRELATION_ID = "";

    /** Thrown by a send the broker refused: it closed the channel, returned the message or nacked it. */
    public static final class PublishRefused extends RuntimeException {

        private final int replyCode;
        private final String replyText;

        PublishRefused(int replyCode, String replyText, Throwable cause) {
            super("broker refused the publish: " + replyCode + " " + replyText, cause);
            this.replyCode = replyCode;
            this.replyText = replyText;
        }

        /**
         * AMQP's reply code: {@code 406} ({@link AMQP#PRECONDITION_FAILED}) for a {@code user_id} not the
         * connection's user, {@code 312} ({@link AMQP#NO_ROUTE}) for no such queue, {@code 0} for a nack.
         */
        public int replyCode() {
            return replyCode;
        }

        public String replyText() {
            return replyText;
        }
    }

    private final ConnectionFactory factory;
    private final String username;
    private final Connection connection;
    private final String replyQueue;
    private final Map<String, List<QueueAnswer>> answers;
    /** The message the broker returned as unroutable during the publish in progress, if it did. */
    private final AtomicReference<Return> returned = new AtomicReference<>();
    /** Confirming; opened again after the broker closed it for a refused publish. Guarded by this. */
    private Channel publishing;

    private QueueClient(ConnectionFactory factory, String username, Connection connection, String replyQueue,
            Map<String, List<QueueAnswer>> answers) {
        this.factory = factory;
        this.username = username;
        this.connection = connection;
        this.replyQueue = replyQueue;
        this.answers = answers;
    }

    /** Connects to {@code vhost} as {@code as} and starts reading answers. */
    public static QueueClient connect(RabbitVhost vhost, RabbitVhost.Credentials as) throws IOException {
        return connect(vhost.host(), vhost.port(), vhost.name(), as);
    }

    /** Connects to the vhost {@code vhost} of the broker at host:port as {@code as} and starts reading answers. */
    public static QueueClient connect(String host, int port, String vhost, RabbitVhost.Credentials as)
            throws IOException {
        return open(factory(host, port, vhost, as), as.username(), null, new ConcurrentHashMap<>());
    }

    /**
     * A new connection as this client's user, reading this client's reply queue again (durable, it outlived
     * this connection: a broker node killed and started again, a connection cut), with the answers this client
     * collected; this client is closed, its reply queue left. Fails when the reply queue is gone.
     */
    public QueueClient resume() throws IOException {
        connection.abort(RPC_TIMEOUT_MS);
        return open(factory, username, replyQueue, answers);
    }

    /** A connection reading {@code replyQueue}, or a new reply queue when it is null, into {@code answers}. */
    private static QueueClient open(ConnectionFactory factory, String username, String replyQueue,
            Map<String, List<QueueAnswer>> answers) throws IOException {
        Connection connection;
        try {
            connection = factory.newConnection("payonce-test-" + username);
        } catch (TimeoutException e) {
            throw new IOException("no connection to " + factory.getHost() + ":" + factory.getPort() + " within "
                    + CONNECT_TIMEOUT_MS + " ms", e);
        }
        try {
            Channel replies = connection.createChannel();
            String queue = replyQueue != null ? replies.queueDeclarePassive(replyQueue).getQueue()
                    // durable and replicated, as the AsyncAPI document tells producers: an answer survives the loss of
                    // the node the queue's leader was on, and the broker never returns it as unroutable for a node's
                    // restart
                    : replies.queueDeclare("payonce-test-replies-" + UUID.randomUUID(), true, false, false,
                            Map.of("x-queue-type", "quorum")).getQueue();
            QueueClient client = new QueueClient(factory, username, connection, queue, answers);
            // acknowledged once collected: an answer on its way when the connection went comes again
            replies.basicQos(100);
            replies.basicConsume(queue, false, (tag, delivery) -> {
                client.collect(QueueAnswer.of(delivery.getProperties(), delivery.getBody()));
                replies.basicAck(delivery.getEnvelope().getDeliveryTag(), false);
            }, tag -> {
            });
            return client;
        } catch (IOException | RuntimeException e) {
            connection.abort(RPC_TIMEOUT_MS);
            throw e;
        }
    }

    /** The connection factory every client of the tests uses: no automatic recovery, every wait bounded. */
    public static ConnectionFactory factory(String host, int port, String vhost, RabbitVhost.Credentials as) {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost(host);
        factory.setPort(port);
        factory.setVirtualHost(vhost);
        factory.setUsername(as.username());
        factory.setPassword(as.password());
        factory.setAutomaticRecoveryEnabled(false);
        factory.setTopologyRecoveryEnabled(false);
        factory.setConnectionTimeout(CONNECT_TIMEOUT_MS);
        factory.setHandshakeTimeout(CONNECT_TIMEOUT_MS);
        factory.setChannelRpcTimeout(RPC_TIMEOUT_MS);
        factory.setShutdownTimeout(RPC_TIMEOUT_MS);
        return factory;
    }

    public String username() {
        return username;
    }

    /** The server-named queue answers come to: every send's {@code reply_to}. */
    public String replyQueue() {
        return replyQueue;
    }

    /** Whether the connection is open: false once the broker closed it or went away. */
    public boolean isOpen() {
        return connection.isOpen();
    }

    /**
     * The properties {@link #send} gives a command, to change before {@link #sendRaw}: {@code content_type}
     * JSON, {@code user_id} this client's user, the header {@code idempotency-key} (left out when
     * {@code idempotencyKey} is null) and {@code extraHeaders}, a fresh {@code correlation_id},
     * {@code reply_to} this client's reply queue, persistent. A test replaces what it means to change:
     * {@code .userId(null)} for none, {@code .userId(other)} to forge it, {@code .headers(...)} for others.
     */
    public AMQP.BasicProperties.Builder properties(String idempotencyKey, Map<String, Object> extraHeaders) {
        Map<String, Object> headers = new LinkedHashMap<>();
        if (idempotencyKey != null) {
            headers.put(IDEMPOTENCY_KEY, idempotencyKey);
        }
        headers.putAll(extraHeaders);
        return new AMQP.BasicProperties.Builder()
                .contentType(JSON)
                .userId(username)
                .headers(headers)
                .correlationId(UUID.randomUUID().toString())
                .replyTo(replyQueue)
                .deliveryMode(PERSISTENT);
    }

    /** Publishes a command to {@code queue} as {@link #properties} describes; answers its correlation id. */
    public String send(String queue, String idempotencyKey, String jsonBody) {
        return send(queue, idempotencyKey, jsonBody, Map.of());
    }

    /** Publishes a command to {@code queue} with {@code extraHeaders} besides the key; answers its correlation id. */
    public String send(String queue, String idempotencyKey, String jsonBody, Map<String, Object> extraHeaders) {
        AMQP.BasicProperties properties = properties(idempotencyKey, extraHeaders).build();
        sendRaw(queue, properties, jsonBody.getBytes(StandardCharsets.UTF_8));
        return properties.getCorrelationId();
    }

    /**
     * Publishes {@code body} with exactly {@code properties} to {@code queue} through the default exchange,
     * and returns once the broker confirmed it; throws {@link PublishRefused} when the broker refused it.
     */
    public synchronized void sendRaw(String queue, AMQP.BasicProperties properties, byte[] body) {
        returned.set(null);
        try {
            Channel channel = publishing();
            channel.basicPublish("", queue, true, properties, body);
            channel.waitForConfirmsOrDie(CONFIRM_BOUND.toMillis());
        } catch (ShutdownSignalException e) {
            throw refused(e);
        } catch (IOException e) {
            if (e.getCause() instanceof ShutdownSignalException shutdown) {
                throw refused(shutdown);
            }
            throw new PublishRefused(0, "nacked or failed: " + e.getMessage(), e);
        } catch (TimeoutException e) {
            throw new IllegalStateException("no confirm from the broker within " + CONFIRM_BOUND + " for a publish to "
                    + queue, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for a confirm", e);
        }
        Return unroutable = returned.get();
        if (unroutable != null) {
            throw new PublishRefused(unroutable.getReplyCode(),
                    unroutable.getReplyText() + " (no queue " + unroutable.getRoutingKey() + ")", null);
        }
    }

    /** The answers to {@code correlationId} so far, in the order they came. */
    public List<QueueAnswer> answers(String correlationId) {
        return List.copyOf(answers.getOrDefault(correlationId, List.of()));
    }

    /** Until {@code count} answers to {@code correlationId} have come, and answers all that came; fails after {@code bound}. */
    public List<QueueAnswer> awaitAnswers(String correlationId, int count, Duration bound) {
        return Await.until(count + " answer(s) to " + correlationId + " on " + replyQueue, bound,
                () -> answers(correlationId), seen -> seen.size() >= count);
    }

    /** Until an answer to {@code correlationId} has come, and answers the first; fails after {@code bound}. */
    public QueueAnswer awaitAnswer(String correlationId, Duration bound) {
        return awaitAnswers(correlationId, 1, bound).getFirst();
    }

    /** A new channel on this client's connection, for what the methods here leave out; the caller closes it. */
    public Channel openChannel() throws IOException {
        return connection.createChannel();
    }

    /** Whether {@code queue} exists in this client's vhost. */
    public boolean queueExists(String queue) throws IOException {
        try (Channel channel = connection.createChannel()) {
            channel.queueDeclarePassive(queue);
            return true;
        } catch (IOException e) {
            if (e.getCause() instanceof ShutdownSignalException shutdown && replyCode(shutdown) == AMQP.NOT_FOUND) {
                return false; // the broker closed the channel for it, so there is nothing to close
            }
            throw e;
        } catch (TimeoutException e) {
            throw new IOException("closing a channel timed out", e);
        }
    }

    /** Until {@code queue} exists (declared by the service as it starts), bounded by {@code bound}. */
    public void awaitQueue(String queue, Duration bound) {
        Await.until("queue " + queue + " to be declared", bound, () -> queueExists(queue));
    }

    /** How many messages ready for delivery {@code queue} holds (a passive declare); fails if there is no such queue. */
    public long messageCount(String queue) throws IOException {
        try (Channel channel = connection.createChannel()) {
            return channel.queueDeclarePassive(queue).getMessageCount();
        } catch (TimeoutException e) {
            throw new IOException("closing a channel timed out", e);
        }
    }

    /** Takes one message off {@code queue} (acknowledged as it is taken), if it holds one. */
    public Optional<GetResponse> get(String queue) throws IOException {
        try (Channel channel = connection.createChannel()) {
            return Optional.ofNullable(channel.basicGet(queue, true));
        } catch (TimeoutException e) {
            throw new IOException("closing a channel timed out", e);
        }
    }

    /** Until {@code queue} holds a message, and takes it; fails after {@code bound}. */
    public GetResponse awaitMessage(String queue, Duration bound) {
        return Await.until("a message on " + queue, bound, () -> get(queue), Optional::isPresent).orElseThrow();
    }

    @Override
    public void close() {
        if (connection.isOpen()) {
            try (Channel deleting = connection.createChannel()) {
                // a durable reply queue outlives its reader: gone with it
                deleting.queueDelete(replyQueue);
            } catch (IOException | TimeoutException | RuntimeException e) {
                // the vhost goes with the test class anyway
            }
            try {
                connection.close(RPC_TIMEOUT_MS);
                return;
            } catch (IOException | RuntimeException e) {
                // closed under us: abort below releases what is left
            }
        }
        connection.abort(RPC_TIMEOUT_MS);
    }

    private void collect(QueueAnswer answer) {
        String key = answer.correlationId() == null ? NO_CORRELATION_ID : answer.correlationId();
        answers.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).add(answer);
    }

    private Channel publishing() throws IOException {
        if (publishing == null || !publishing.isOpen()) {
            Channel channel = connection.createChannel();
            channel.confirmSelect();
            channel.addReturnListener(returned::set);
            publishing = channel;
        }
        return publishing;
    }

    private static PublishRefused refused(ShutdownSignalException shutdown) {
        Method reason = shutdown.getReason();
        String text = reason instanceof AMQP.Channel.Close close ? close.getReplyText()
                : reason instanceof AMQP.Connection.Close close ? close.getReplyText() : String.valueOf(reason);
        return new PublishRefused(replyCode(shutdown), text, shutdown);
    }

    private static int replyCode(ShutdownSignalException shutdown) {
        Method reason = shutdown.getReason();
        if (reason instanceof AMQP.Channel.Close close) {
            return close.getReplyCode();
        }
        if (reason instanceof AMQP.Connection.Close close) {
            return close.getReplyCode();
        }
        return 0;
    }
}
