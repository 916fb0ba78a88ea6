package io.payonce.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import com.rabbitmq.client.Address;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.MessageProperties;

import io.payonce.support.RabbitCluster.QueueMembers;
import io.payonce.support.RabbitVhost.Credentials;

/** The three-node cluster: apart from the shared node, and a quorum queue on it outliving its leader's node. */
@ExtendWith(ServerLogs.OnFailure.class)
class RabbitClusterIT {

    /** Enough to be a stream, few enough to publish and read in well under a second. */
    private static final int MESSAGES = 200;
    private static final Set<Integer> ALL = Set.of(1, 2, 3);
    private static RabbitCluster cluster;
    private static RabbitVhost vhost;

    @BeforeAll
    static void startOrShare() throws IOException {
        long before = System.nanoTime();
        cluster = RabbitCluster.shared();
        System.out.printf("RabbitMQ cluster %s: formed in %d ms (shared() took %d ms)%n", cluster.addresses(),
                cluster.lastStart().toMillis(), (System.nanoTime() - before) / 1_000_000);
        vhost = cluster.vhost(RabbitClusterIT.class);
    }

    @AfterAll
    static void deleteVhost() {
        if (vhost != null) {
            vhost.close();
        }
    }

    /** Whatever a test killed is running again for the next: what {@code shared()} guarantees. */
    @AfterEach
    void bringBack() throws IOException {
        RabbitCluster.shared();
    }

    @Test
    void threeNodes_clusteredApartFromTheSharedOne() {
        Set<String> names = IntStream.rangeClosed(1, 3).mapToObj(cluster::node).collect(Collectors.toSet());
        Set<Integer> ports = IntStream.rangeClosed(1, 3).mapToObj(cluster::port).collect(Collectors.toSet());
        assertEquals(3, names.size(), names::toString);
        assertEquals(3, ports.size(), ports::toString);
        assertFalse(names.contains(RabbitmqCtl.SHARED_NODE));
        assertFalse(ports.contains(RabbitVhost.SHARED_PORT));
        names.forEach(name -> assertTrue(name.matches("payonce-c[a-z0-9]{6}-[123]@localhost"), name));
        assertEquals("127.0.0.1:" + cluster.port(1) + ",127.0.0.1:" + cluster.port(2) + ",127.0.0.1:"
                + cluster.port(3), cluster.addresses());
        for (int i = 1; i <= 3; i++) {
            assertEquals(new TreeSet<>(names), cluster.runningNodes(i), "node " + i + "'s view of the cluster");
        }
        assertEquals(cluster.addresses(), vhost.properties(Credentials.GUEST).get("rabbitmq-addresses"));
    }

    @Test
    void quorumQueue_keepsEveryConfirmedMessage_whenItsLeadersNodeIsKilled() throws Exception {
        String queue = "payonce.pay." + RabbitVhost.random(6);
        try (Connection connection = guest(1).newConnection(Address.parseAddresses(cluster.addresses()));
                Channel channel = connection.createChannel()) {
            channel.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
            channel.confirmSelect();
            for (int i = 0; i < MESSAGES; i++) {
                channel.basicPublish("", queue, true, MessageProperties.PERSISTENT_BASIC, body(i));
            }
            channel.waitForConfirmsOrDie(QueueClient.CONFIRM_BOUND.toMillis());
        }
        QueueMembers before = cluster.awaitMembers(vhost.name(), queue, 3);
        assertEquals(ALL, before.online(), before::toString);
        int leader = before.leader();
        ProcessHandle vm = cluster.vm(leader).orElseThrow();

        long killed = System.nanoTime();
        cluster.kill9(leader);
        assertFalse(vm.isAlive(), "the Erlang VM of node " + leader + " itself is dead");
        assertFalse(cluster.running(leader));

        QueueMembers after = cluster.awaitMembers(vhost.name(), queue, 2);
        System.out.printf("node %d (leader) killed; %s %d ms later%n", leader, after,
                (System.nanoTime() - killed) / 1_000_000);
        assertNotEquals(leader, after.leader(), after::toString);
        assertFalse(after.online().contains(leader), after::toString);

        // read through the survivor that does not lead: a node of the cluster serves what its leader holds
        int follower = after.online().stream().filter(i -> i != after.leader()).findFirst().orElseThrow();
        try (Connection connection = guest(follower).newConnection(); Channel channel = connection.createChannel()) {
            for (int i = 0; i < MESSAGES; i++) {
                GetResponse message = channel.basicGet(queue, true);
                assertNotNull(message, "confirmed message " + i + " of " + MESSAGES + " is gone");
                assertEquals(new String(body(i), StandardCharsets.UTF_8),
                        new String(message.getBody(), StandardCharsets.UTF_8));
            }
            assertNull(channel.basicGet(queue, true), "nothing but what was published");
        }

        long restarted = System.nanoTime();
        cluster.start(leader);
        QueueMembers back = cluster.awaitMembers(vhost.name(), queue, 3);
        System.out.printf("node %d started again; %s %d ms later%n", leader, back,
                (System.nanoTime() - restarted) / 1_000_000);
        assertEquals(ALL, back.online(), back::toString);
    }

    /** Guest on this class's vhost, node {@code i} the one address unless the caller gives others. */
    private static ConnectionFactory guest(int i) {
        return QueueClient.factory(RabbitCluster.HOST, cluster.port(i), vhost.name(), Credentials.GUEST);
    }

    private static byte[] body(int i) {
        return ("{\"order_no\":\"ord_" + i + "\"}").getBytes(StandardCharsets.UTF_8);
    }
}
