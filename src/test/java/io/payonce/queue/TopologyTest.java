package io.payonce.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.Map;

import org.junit.jupiter.api.Test;

/** The command queues carry no broker delivery limit on any RabbitMQ version: PayOnce counts deliveries itself. */
class TopologyTest {

    @Test
    void onRabbitMq3_commandQueuesAreDeclaredWithoutADeliveryLimit() {
        Map<String, Object> arguments = Topology.commandArguments("3.10.8");

        assertFalse(arguments.containsKey("x-delivery-limit"), arguments::toString);
        assertEquals("quorum", arguments.get("x-queue-type"));
        assertEquals(Topology.DEAD, arguments.get("x-dead-letter-routing-key"));
    }

    @Test
    void onRabbitMq4_theDefaultLimitOf20IsLifted() {
        assertEquals(-1, Topology.commandArguments("4.3.0").get("x-delivery-limit"));
    }

    @Test
    void anUnreadableVersion_isTakenForAnOldOne() {
        assertEquals(0, Topology.majorVersion("unknown"));
        assertEquals(3, Topology.majorVersion("3.10.8"));
    }
}
