package io.payonce.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;

import io.payonce.support.RabbitVhost.Credentials;

/** The private node: a broker the tests may stop and restart, apart from the shared one. */
@ExtendWith(ServerLogs.OnFailure.class)
class PrivateRabbitIT {

    private static final Duration BOUND = Duration.ofSeconds(10);
    private static PrivateRabbit rabbit;

    @BeforeAll
    static void startOrShare() throws IOException {
        long before = System.nanoTime();
        rabbit = PrivateRabbit.shared();
        System.out.printf("private RabbitMQ node %s on port %d: started in %d ms (shared() took %d ms)%n",
                rabbit.node(), rabbit.port(), rabbit.lastStart().toMillis(), (System.nanoTime() - before) / 1_000_000);
    }

    @Test
    void privateNode_isApartFromTheSharedOne() {
        assertNotEquals(RabbitmqCtl.SHARED_NODE, rabbit.node());
        assertTrue(rabbit.node().startsWith("payonce-test-"), rabbit.node());
        assertNotEquals(RabbitVhost.SHARED_PORT, rabbit.port());
        assertTrue(rabbit.ctl("-s", "list_vhosts", "name").lines().anyMatch("/"::equals));
    }

    @Test
    void durableQuorumQueue_survivesRestart() throws Exception {
        String queue = "payonce.pay." + RabbitVhost.random(6);
        try (QueueClient client = guest()) {
            try (Channel channel = client.openChannel()) {
                channel.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
            }
            client.send(queue, "tok_1", "{\"order_no\":\"ord_1\"}");
        }

        rabbit.restart();
        System.out.printf("restart of %s took its start %d ms%n", rabbit.node(), rabbit.lastStart().toMillis());

        try (QueueClient client = guest()) {
            client.awaitQueue(queue, BOUND);
            GetResponse message = client.awaitMessage(queue, BOUND);
            assertEquals("{\"order_no\":\"ord_1\"}", new String(message.getBody(), StandardCharsets.UTF_8));
            assertEquals("tok_1", QueueAnswer.readable(message.getProps().getHeaders()).get("idempotency-key"));
        }
    }

    @Test
    void kill9_cutsConnections_andTheNodeStartedAgainKeepsConfirmedMessages() throws Exception {
        String queue = "payonce.pay." + RabbitVhost.random(6);
        QueueClient before = guest();
        try {
            try (Channel channel = before.openChannel()) {
                channel.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
            }
            before.send(queue, "tok_2", "{\"order_no\":\"ord_2\"}");
            // Ra (RabbitMQ's quorum queues) writes its register of queues to disk up to 500 ms after a change: a
            // queue declared just before a crash is not found again, its messages with it
            Thread.sleep(1_500);

            rabbit.kill9();
            Await.until("the connection to be gone with the node", BOUND, () -> !before.isOpen());
            assertThrows(IOException.class, this::guest, "nothing listens while the node is down");
        } finally {
            before.close();
            rabbit.startAgain();
        }

        try (QueueClient after = guest()) {
            GetResponse message = after.awaitMessage(queue, BOUND);
            assertEquals("{\"order_no\":\"ord_2\"}", new String(message.getBody(), StandardCharsets.UTF_8));
        }
    }

    @Test
    void stopApp_cutsConnections_andStartAppServesNewOnes() throws Exception {
        QueueClient before = guest();
        try {
            rabbit.stopApp();
            Await.until("the broker to close the connection", BOUND, () -> !before.isOpen());
            assertThrows(IOException.class, this::guest, "nothing listens while the application is stopped");
        } finally {
            before.close();
            rabbit.startApp();
        }

        try (QueueClient after = guest()) {
            assertTrue(after.isOpen());
            assertTrue(after.queueExists(after.replyQueue()));
        }
    }

    @Test
    void vhostOnThePrivateNode_admitsItsMerchant() throws Exception {
        try (RabbitVhost vhost = rabbit.vhost(PrivateRabbitIT.class)) {
            Credentials merchant = vhost.user(Fixtures.id("merchant"));
            assertEquals(rabbit.port(), vhost.port());

            try (Connection connection = QueueClient.factory(vhost.host(), vhost.port(), vhost.name(), merchant)
                    .newConnection()) {
                assertTrue(connection.isOpen());
            }
        }
    }

    private QueueClient guest() throws IOException {
        return QueueClient.connect(rabbit.host(), rabbit.port(), "/", Credentials.GUEST);
    }
}
