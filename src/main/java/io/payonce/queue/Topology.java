package io.payonce.queue;

import java.io.IOException;
import java.util.Map;

import com.rabbitmq.client.Channel;

/**
 * The queues the entrance declares, durable and quorum, at every connection (and again whenever the client
 * recovers one): commands on {@link #PAY}, and what can never be answered otherwise on {@link #DEAD}, where
 * {@link #PAY}'s dead-letter exchange sends what the entrance rejects and what the broker gave up delivering.
 * A command that met a passing failure is returned to {@link #PAY} after the retry delay (the delivery held
 * meanwhile) and comes back with the broker's {@code x-delivery-count}; it keeps its validated
 * {@code user_id}, which a copy published again by PayOnce could not carry. A queue declared before with other
 * arguments is refused by the broker (the operator deletes it): declaring never changes what is there.
 */
final class Topology {

    static final String PAY = "payonce.pay";
    static final String DEAD = "payonce.dead";
    /**
     * Deliveries of one command (returned by a nack, or by a consumer's crash) after which the broker
     * dead-letters it: a command that kills every instance that takes it stops doing so. Far above what
     * restarts and connection cuts return in normal operation.
     */
    static final int DELIVERY_LIMIT = 20;

    private Topology() {
    }

    static void declare(Channel channel) throws IOException {
        channel.queueDeclare(DEAD, true, false, false, Map.of("x-queue-type", "quorum"));
        channel.queueDeclare(PAY, true, false, false, Map.of(
                "x-queue-type", "quorum",
                "x-delivery-limit", DELIVERY_LIMIT,
                "x-dead-letter-exchange", "",
                "x-dead-letter-routing-key", DEAD));
    }
}
