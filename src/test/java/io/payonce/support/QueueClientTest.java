package io.payonce.support;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.GetResponse;

import io.payonce.support.QueueClient.PublishRefused;
import io.payonce.support.RabbitVhost.Credentials;

/** The merchant's side of the queue entrance against the shared broker, a raw channel playing the service. */
class QueueClientTest {

    private static final String PAY = "payonce.pay";
    private static final String DEAD = "payonce.dead";
    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final String BODY = "{\"order_no\":\"ord_1\",\"amount\":1999}";

    private static RabbitVhost vhost;
    private static Credentials merchantA;
    private static Credentials merchantB;
    private static Connection service;
    private static Channel serviceChannel;
    private QueueClient client;
    private final List<Channel> consumers = new ArrayList<>();

    @BeforeAll
    static void vhostWithTwoMerchants() throws Exception {
        vhost = RabbitVhost.create(QueueClientTest.class);
        merchantA = vhost.user(Fixtures.id("merchant"));
        merchantB = vhost.user(Fixtures.id("merchant"));
        service = QueueClient.factory(vhost.host(), vhost.port(), vhost.name(), Credentials.GUEST).newConnection();
        serviceChannel = service.createChannel();
        serviceChannel.queueDeclare(PAY, true, false, false, Map.of("x-queue-type", "quorum"));
        serviceChannel.queueDeclare(DEAD, true, false, false, Map.of("x-queue-type", "quorum"));
    }

    @AfterAll
    static void closeAll() throws Exception {
        if (service != null) {
            service.close();
        }
        if (vhost != null) {
            vhost.close();
        }
    }

    @BeforeEach
    void emptyQueuesAndConnect() throws Exception {
        serviceChannel.queuePurge(PAY);
        serviceChannel.queuePurge(DEAD);
        client = QueueClient.connect(vhost, merchantA);
    }

    @AfterEach
    void disconnect() throws Exception {
        client.close();
        for (Channel consumer : consumers) {
            consumer.close();
        }
    }

    @Test
    void sentCommand_arrivesWithTheValidatedUserIdAndTheContractsProperties() throws Exception {
        BlockingQueue<Delivery> arrived = consume(PAY);

        String correlationId = client.send(PAY, "tok_1", BODY, Map.of("trace", "t-1"));

        Delivery delivery = arrived.poll(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(delivery, "the command arrived");
        AMQP.BasicProperties properties = delivery.getProperties();
        assertEquals(merchantA.username(), properties.getUserId());
        assertEquals("application/json", properties.getContentType());
        assertEquals(correlationId, properties.getCorrelationId());
        assertEquals(client.replyQueue(), properties.getReplyTo());
        assertEquals(2, properties.getDeliveryMode(), "persistent");
        Map<String, Object> headers = QueueAnswer.readable(properties.getHeaders());
        assertEquals("tok_1", headers.get("idempotency-key"));
        assertEquals("t-1", headers.get("trace"));
        assertEquals(BODY, new String(delivery.getBody(), StandardCharsets.UTF_8));
        assertEquals("", delivery.getEnvelope().getExchange(), "the default exchange");
    }

    @Test
    void forgedUserId_isRefusedByTheBroker() throws Exception {
        AMQP.BasicProperties forged = client.properties("tok_1", Map.of()).userId(merchantB.username()).build();

        PublishRefused refused = assertThrows(PublishRefused.class,
                () -> client.sendRaw(PAY, forged, BODY.getBytes(StandardCharsets.UTF_8)));

        assertEquals(AMQP.PRECONDITION_FAILED, refused.replyCode(), refused.getMessage());
        assertTrue(refused.replyText().contains("user_id"), refused.replyText());
        assertEquals(0, client.messageCount(PAY), "nothing was enqueued");
    }

    @Test
    void afterARefusal_theNextSendGoesThrough() throws Exception {
        AMQP.BasicProperties forged = client.properties("tok_1", Map.of()).userId(merchantB.username()).build();
        assertThrows(PublishRefused.class, () -> client.sendRaw(PAY, forged, BODY.getBytes(StandardCharsets.UTF_8)));

        client.send(PAY, "tok_2", BODY);

        assertEquals(1, client.messageCount(PAY));
    }

    @Test
    void commandToAQueueNotDeclared_isRefusedAsUnroutable() {
        PublishRefused refused = assertThrows(PublishRefused.class, () -> client.send("payonce.nosuch", "tok_1", BODY));

        assertEquals(AMQP.NO_ROUTE, refused.replyCode(), refused.getMessage());
    }

    @Test
    void rawCommand_carriesExactlyWhatTheTestGave() throws Exception {
        BlockingQueue<Delivery> arrived = consume(PAY);
        byte[] malformed = {'{', '"', (byte) 0xff};
        AMQP.BasicProperties raw = client.properties(null, Map.of("merchant-id", merchantB.username()))
                .userId(null).build();

        client.sendRaw(PAY, raw, malformed);

        Delivery delivery = arrived.poll(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(delivery, "the command arrived");
        assertNull(delivery.getProperties().getUserId(), "no user_id");
        Map<String, Object> headers = QueueAnswer.readable(delivery.getProperties().getHeaders());
        assertFalse(headers.containsKey("idempotency-key"));
        assertEquals(merchantB.username(), headers.get("merchant-id"));
        assertArrayEquals(malformed, delivery.getBody());
    }

    @Test
    void answersToTheReplyQueue_areCollectedByCorrelationId() throws Exception {
        String correlationId = client.send(PAY, "tok_1", BODY);
        String other = client.send(PAY, "tok_2", BODY);

        answer(correlationId, Map.of("status", 200), "{\"status\":\"PAID\"}");
        answer(other, Map.of("status", 409, "code", "idempotency_key_in_use"), "{\"code\":\"idempotency_key_in_use\"}");
        answer(correlationId, Map.of("status", 200, "idempotent-replayed", true), "{\"status\":\"PAID\"}");

        List<QueueAnswer> answers = client.awaitAnswers(correlationId, 2, BOUND);
        assertEquals(2, answers.size());
        assertEquals(200, answers.get(0).status());
        assertFalse(answers.get(0).replayed());
        assertNull(answers.get(0).code());
        assertTrue(answers.get(1).replayed());
        assertEquals(answers.get(0).body(), answers.get(1).body());
        QueueAnswer refusal = client.awaitAnswer(other, BOUND);
        assertEquals(409, refusal.status());
        assertEquals("idempotency_key_in_use", refusal.code());
    }

    @Test
    void awaitingAnAnswerThatNeverComes_failsAfterItsBound() {
        AssertionError failure = assertThrows(AssertionError.class,
                () -> client.awaitAnswer("no-such-correlation-id", Duration.ofMillis(200)));

        assertTrue(failure.getMessage().contains("no-such-correlation-id"), failure.getMessage());
    }

    @Test
    void deadLetteredMessages_areCountedAndTaken() throws Exception {
        serviceChannel.basicPublish("", DEAD, null, "first".getBytes(StandardCharsets.UTF_8));
        serviceChannel.basicPublish("", DEAD, null, "second".getBytes(StandardCharsets.UTF_8));
        Await.until("two messages on " + DEAD, BOUND, () -> client.messageCount(DEAD) == 2);

        GetResponse first = client.awaitMessage(DEAD, BOUND);
        GetResponse second = client.get(DEAD).orElseThrow();

        assertEquals("first", new String(first.getBody(), StandardCharsets.UTF_8));
        assertEquals("second", new String(second.getBody(), StandardCharsets.UTF_8));
        assertTrue(client.get(DEAD).isEmpty());
        assertEquals(0, client.messageCount(DEAD));
    }

    @Test
    void queueExists_tellsDeclaredFromAbsent() throws Exception {
        assertTrue(client.queueExists(PAY));
        assertFalse(client.queueExists("payonce.nosuch"));
        assertTrue(client.isOpen(), "a passive declare of an absent queue leaves the connection open");
    }

    /** A raw consumer of {@code queue}, as the service's, cancelled after the test. */
    private BlockingQueue<Delivery> consume(String queue) throws Exception {
        BlockingQueue<Delivery> arrived = new LinkedBlockingQueue<>();
        Channel channel = service.createChannel();
        consumers.add(channel);
        channel.basicConsume(queue, true, (tag, delivery) -> arrived.add(delivery), tag -> {
        });
        return arrived;
    }

    /** As the service answers: to the command's reply_to, with its correlation id. */
    private void answer(String correlationId, Map<String, Object> headers, String body) throws Exception {
        AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder().correlationId(correlationId)
                .contentType("application/json").headers(headers).build();
        serviceChannel.basicPublish("", client.replyQueue(), properties, body.getBytes(StandardCharsets.UTF_8));
    }
}
