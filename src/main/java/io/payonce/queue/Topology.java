package io.payonce.queue;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;

import com.rabbitmq.client.Channel;

/**
 * The queues the entrance declares, durable and quorum, at every connection (and again whenever the client
 * recovers one): pay commands on {@link #PAY}, refund commands on {@link #REFUNDS}, and commands that never
 * executed and never can on {@link #DEAD}, where each command queue's dead-letter exchange sends what the
 * entrance dead-letters. The command queues have no broker delivery limit: RabbitMQ counts every return of a
 * delivery (a nack with requeue, a channel closed with the delivery unacknowledged) and would dead-letter a
 * command that executed, after a long enough database outage, with nobody to answer it. PayOnce counts a
 * command's deliveries itself ({@link CommandAttempts}) and dead-letters only a command whose token shows it
 * never executed. On RabbitMQ 3.x a quorum queue has no limit unless one is given; from 4.0 it has a default of
 * 20, lifted with {@code -1}. A command returned to its queue keeps its validated {@code user_id}, which a copy
 * published again by PayOnce could not carry.
 *
 * <p>A queue declared before with other arguments (an earlier PayOnce's {@code x-delivery-limit: 20}) is refused
 * by the broker with 406 PRECONDITION_FAILED; the operator drains and deletes it (docs/queue.md), and the next
 * connection declares it anew: declaring never changes what is there.
 */
final class Topology {

    static final String PAY = "payonce.pay";
    static final String REFUNDS = "payonce.refunds";
    static final String DEAD = "payonce.dead";
    /** RabbitMQ's quorum queue argument for "no delivery limit", from 4.0 on (where the default is 20). */
    static final int NO_DELIVERY_LIMIT = -1;

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

    /** Declares the queues on a broker of {@code version} (its {@code version} server property). */
    static void declare(Channel channel, String version) throws IOException {
        channel.queueDeclare(DEAD, true, false, false, Map.of("x-queue-type", "quorum"));
        for (CommandQueue queue : CommandQueue.values()) {
            channel.queueDeclare(queue.name, true, false, false, commandArguments(version));
        }
    }

    /** A command queue's arguments: quorum, dead letters to {@link #DEAD}, and no delivery limit. */
    static Map<String, Object> commandArguments(String version) {
        Map<String, Object> arguments = new HashMap<>(Map.of(
                "x-queue-type", "quorum",
                "x-dead-letter-exchange", "",
                "x-dead-letter-routing-key", DEAD));
        if (majorVersion(version) >= 4) {
            arguments.put("x-delivery-limit", NO_DELIVERY_LIMIT);
        }
        return arguments;
    }

    /** The major version of a broker's version string ("3.10.8" is 3); 0 when unreadable. */
    static int majorVersion(String version) {
        int dot = version.indexOf('.');
        try {
            return Integer.parseInt(dot < 0 ? version : version.substring(0, dot));
        } catch (NumberFormatException unreadable) {
            return 0;
        }
    }
}
