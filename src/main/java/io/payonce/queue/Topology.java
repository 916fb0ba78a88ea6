package io.payonce.queue;

import java.io.IOException;
import java.util.Map;

import com.rabbitmq.client.Channel;

/**
 * The queues the entrance declares, durable and quorum, at every connection (and again whenever the client
 * recovers one): pay commands on {@link #PAY}, refund commands on {@link #REFUNDS}, and what can never be
 * answered otherwise on {@link #DEAD}, where each command queue's dead-letter exchange sends what the entrance
 * rejects and what the broker gave up delivering. A command that met a passing failure is returned to its queue
 * after the retry delay (the delivery held meanwhile) and comes back with the broker's {@code x-delivery-count};
 * it keeps its validated {@code user_id}, which a copy published again by PayOnce could not carry. A queue
 * declared before with other arguments is refused by the broker (the operator deletes it): declaring never
 * changes what is there.
 */
final class Topology {

    static final String PAY = "payonce.pay";
    static final String REFUNDS = "payonce.refunds";
    static final String DEAD = "payonce.dead";
    /**
     * Deliveries of one command (returned by a nack, or by a consumer's crash) after which the broker
     * dead-letters it: a command that kills every instance that takes it stops doing so. Far above what
     * restarts and connection cuts return in normal operation.
     */
    static final int DELIVERY_LIMIT = 20;

    /** A queue of commands, and so the kind of command its messages are: the queue decides how a body is read. */
    enum CommandQueue {
        PAY(Topology.PAY), REFUNDS(Topology.REFUNDS);

        final String name;

        CommandQueue(String name) {
            this.name = name;
        }
    }

    private Topology() {
    }

    static void declare(Channel channel) throws IOException {
        channel.queueDeclare(DEAD, true, false, false, Map.of("x-queue-type", "quorum"));
        for (CommandQueue queue : CommandQueue.values()) {
            channel.queueDeclare(queue.name, true, false, false, Map.of(
                    "x-queue-type", "quorum",
                    "x-delivery-limit", DELIVERY_LIMIT,
                    "x-dead-letter-exchange", "",
                    "x-dead-letter-routing-key", DEAD));
        }
    }
}
