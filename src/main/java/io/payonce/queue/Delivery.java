package io.payonce.queue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import org.jboss.logging.Logger;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.AlreadyClosedException;
import com.rabbitmq.client.Channel;

/**
 * One delivery of a command from its queue, settled exactly once: acknowledged, dead-lettered (the queue's dead-letter
 * exchange takes it to {@link Topology#DEAD}) or returned to the queue. A second settlement is ignored; a
 * settlement on a channel that has closed meanwhile changes nothing, and the broker delivers the command
 * again.
 */
final class Delivery {

    private static final Logger LOG = Logger.getLogger(Delivery.class);
    /** Set by the broker (quorum queues) on a command delivered again: how often it was returned before. */
    static final String DELIVERY_COUNT = "x-delivery-count";

    private final Topology.CommandQueue queue;
    private final Channel channel;
    private final long tag;
    private final boolean redelivered;
    private final AMQP.BasicProperties properties;
    private final byte[] body;
    private final AtomicBoolean settled = new AtomicBoolean();

    Delivery(Topology.CommandQueue queue, Channel channel, long tag, boolean redelivered,
            AMQP.BasicProperties properties, byte[] body) {
        this.queue = queue;
        this.channel = channel;
        this.tag = tag;
        this.redelivered = redelivered;
        this.properties = properties;
        this.body = body;
    }

    Topology.CommandQueue queue() {
        return queue;
    }

    boolean redelivered() {
        return redelivered;
    }

    AMQP.BasicProperties properties() {
        return properties;
    }

    byte[] body() {
        return body;
    }

    /** A header's value as text, or null; AMQP carries strings as byte sequences. */
    String header(String name) {
        Map<String, Object> headers = properties.getHeaders();
        Object value = headers == null ? null : headers.get(name);
        if (value == null) {
            return null;
        }
        return value instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : value.toString();
    }

    /** The deliveries of this command before this one (0 for its first). */
    int earlierDeliveries() {
        String value = header(DELIVERY_COUNT);
        try {
            return value == null ? 0 : Math.max(0, Integer.parseInt(value));
        } catch (NumberFormatException forged) {
            return 0;
        }
    }

    void ack() {
        settle("ack", () -> channel.basicAck(tag, false));
    }

    void deadLetter() {
        settle("dead-letter", () -> channel.basicNack(tag, false, false));
    }

    void requeue() {
        settle("requeue", () -> channel.basicNack(tag, false, true));
    }

    @FunctionalInterface
    private interface Settlement {
        void run() throws IOException;
    }

    private void settle(String how, Settlement settlement) {
        if (!settled.compareAndSet(false, true)) {
            return;
        }
        try {
            settlement.run();
        } catch (IOException | AlreadyClosedException closed) {
            // the channel went away with the delivery: the broker delivers the command again
            LOG.debugf("could not %s delivery %d: %s", how, tag, closed);
        }
    }
}
