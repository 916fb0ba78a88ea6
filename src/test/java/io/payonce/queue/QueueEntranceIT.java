package io.payonce.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.GetResponse;

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.Concurrently;
import io.payonce.support.Operations;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayRequest;
import io.payonce.support.QueueAnswer;
import io.payonce.support.QueueClient;

/**
 * Pay commands on RabbitMQ (contract section 9) through the same gate as {@code POST /pay}, against a packaged
 * instance and the local broker, in a vhost of this class's own: a command is paid once and answered as an HTTP
 * client would be; copies by queue and by HTTP at once are one payment with one answer; a 202 is followed by the
 * settled answer; a passing failure is retried, then answered 503 and dead-lettered; a command that can never be
 * answered otherwise is answered with its problem and dead-lettered, without holding up the commands behind it.
 */
class QueueEntranceIT {

    private static final String PAY = "payonce.pay";
    private static final String DEAD = "payonce.dead";
    private static final Duration ANSWER_BOUND = Duration.ofSeconds(20);
    /** Past the channel timeout, the owner's lease, reconciliation's minimum age and its interval below. */
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(30);
    private static final int RETRIES = 2;

    private static QueueInstance instance;
    private static AppProcess app;
    private static QueueClient queue;
    private static PayClient http;

    @BeforeAll
    static void start() throws Exception {
        instance = QueueInstance.start(QueueEntranceIT.class, "queue-entrance",
                app -> QueueInstance.settlingQuickly(app)
                        .env("PAYONCE_QUEUE_RETRIES", Integer.toString(RETRIES))
                        .env("PAYONCE_QUEUE_HOLD", "200ms"));
        app = instance.app;
        queue = instance.queue;
        http = instance.http;
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (instance != null) {
            instance.close();
        }
    }

    @Test
    void command_isPaidOnce_answeredAsHttpWould_andReplayedToItsCopies() {
        PayRequest request = http.newRequest();

        QueueAnswer paid = queue.awaitAnswer(send(request), ANSWER_BOUND);
        Answer overHttp = http.pay(request);
        QueueAnswer again = queue.awaitAnswer(send(request), ANSWER_BOUND);

        assertEquals(200, paid.status(), paid::toString);
        assertFalse(paid.replayed(), paid::toString);
        assertTrue(paid.body().contains("\"status\":\"PAID\""), paid::toString);
        assertEquals(200, overHttp.status(), overHttp::toString);
        assertTrue(overHttp.isReplay(), overHttp::toString);
        assertEquals(paid.body(), overHttp.body(), "the HTTP copy gets the command's answer, byte for byte");
        assertEquals(200, again.status(), again::toString);
        assertTrue(again.replayed(), again::toString);
        assertEquals(paid.body(), again.body());
        Books books = http.books(request.orderNo());
        assertEquals(1, books.charges(), books::toString);
        assertEquals(1, books.attempts(), books::toString);
    }

    @Test
    void copiesByQueueAndByHttpAtOnce_onePayment_oneAnswer() {
        PayRequest request = http.newRequest();
        // below the 1 s channel timeout: the first execution is paid while the copies wait for it
        http.sandbox("ok", 500, 1);

        List<String> bodies = Concurrently.all(16, ANSWER_BOUND.plusSeconds(10), (group, copy) -> {
            if (copy % 2 == 0) {
                QueueAnswer answer = queue.awaitAnswer(send(request), ANSWER_BOUND);
                return answer.status() + " " + answer.body();
            }
            Answer answer = http.pay(request);
            return answer.status() + " " + answer.body();
        });

        assertEquals(1, bodies.stream().distinct().count(), () -> "one answer: " + bodies);
        assertTrue(bodies.getFirst().startsWith("200 "), bodies::toString);
        Books books = http.books(request.orderNo());
        assertEquals(1, books.charges(), books::toString);
        assertEquals(1, books.attempts(), books::toString);
        assertEquals(1, books.payments().size(), books::toString);
    }

    /** The channel answers after the service gave up: 202 now, the settled answer once reconciliation has it. */
    @Test
    void interim202_isFollowedByTheSettledAnswer() {
        PayRequest request = http.newRequest();
        http.sandbox("timeout_after_accept", 0, 1);

        String correlationId = send(request);
        List<QueueAnswer> answers = queue.awaitAnswers(correlationId, 2, SETTLE_BOUND);

        assertEquals(202, answers.get(0).status(), answers::toString);
        assertEquals(false, answers.get(0).headers().get("final"), "a 202 is no final answer: " + answers);
        assertEquals(200, answers.get(1).status(), answers::toString);
        assertEquals(true, answers.get(1).headers().get("final"), answers::toString);
        assertTrue(answers.get(1).body().contains("\"status\":\"PAID\""), answers::toString);
        assertEquals(http.pay(request).body(), answers.get(1).body(), "the settled answer is the stored one");
        assertEquals(1, http.books(request.orderNo()).charges());
    }

    /** The channel refuses before accepting: nothing charged, the command delivered again after the delay. */
    @Test
    void passingFailure_isRetried_untilPaid() {
        PayRequest request = http.newRequest();
        http.sandbox("fail_before_accept", 0, RETRIES);

        QueueAnswer paid = queue.awaitAnswer(send(request), ANSWER_BOUND);

        assertEquals(200, paid.status(), () -> "paid at the last try: " + queue.answers(paid.correlationId()));
        assertEquals(1, queue.answers(paid.correlationId()).size(), "no answer for the tries before");
        assertEquals(1, http.books(request.orderNo()).charges());
    }

    @Test
    void passingFailure_pastItsRetries_isAnswered503_andDeadLettered() throws IOException {
        PayRequest request = http.newRequest();
        long deadBefore = queue.messageCount(DEAD);
        http.sandbox("fail_before_accept", 0, RETRIES + 5);

        QueueAnswer refused = queue.awaitAnswer(send(request), ANSWER_BOUND);

        assertEquals(503, refused.status(), refused::toString);
        assertEquals("temporarily_unavailable", refused.code(), refused::toString);
        assertEquals(false, refused.headers().get("final"), "nothing was charged, and it may be sent again");
        Await.until("the command on " + DEAD, ANSWER_BOUND, () -> queue.messageCount(DEAD) == deadBefore + 1);
        assertEquals(0, http.books(request.orderNo()).charges());
        http.sandbox("ok", 0, 0);
    }

    /**
     * Commands that can never get a stored answer: each answered with its problem and dead-lettered, and a good
     * command sent after them all is paid.
     */
    @Test
    void poisonCommands_areAnsweredWithTheirProblem_deadLettered_andHoldNothingUp() throws IOException {
        PayRequest request = http.newRequest();
        String body = request.json();
        long deadBefore = queue.messageCount(DEAD);
        // correlation id -> the problem code its answer must carry
        Map<String, String> sent = new LinkedHashMap<>();
        sent.put(raw(queue.properties(request.token(), Map.of()).build(), "{\"order_no\":"), "malformed_json");
        sent.put(raw(queue.properties(request.token(), Map.of()).userId(null).build(), body), "merchant_required");
        sent.put(raw(queue.properties(request.token(), Map.of()).build(),
                body.replace("{", "{\"merchant_id\":\"another_merchant\",")), "invalid_request");
        sent.put(raw(queue.properties(request.token(), Map.of("merchant-id", "another_merchant")).build(), body),
                "merchant_required");

        QueueAnswer paid = queue.awaitAnswer(send(request), ANSWER_BOUND);

        sent.forEach((correlationId, code) -> {
            QueueAnswer answer = queue.awaitAnswer(correlationId, ANSWER_BOUND);
            assertEquals(code, answer.code(), answer::toString);
            assertTrue(answer.body().startsWith("{\"type\":\"urn:payonce:problem:" + code), answer::toString);
        });
        Await.until("the four commands on " + DEAD, ANSWER_BOUND,
                () -> queue.messageCount(DEAD) == deadBefore + sent.size());
        assertEquals(200, paid.status(), paid::toString);
        assertEquals(1, http.books(request.orderNo()).charges());
    }

    /**
     * A reply queue that is not there (its node down, say): the broker returns the answer (mandatory), which is
     * counted and stays owed; once the queue is back, the answer reaches it.
     */
    @Test
    void answerToAReplyQueueThatIsMissing_isReturned_counted_andSentAgainOnceTheQueueIsBack() throws Exception {
        PayRequest request = http.newRequest();
        double before = Operations.metricSum(app, "payonce_queue_replies_unroutable_total");
        String replyQueue = "late-" + UUID.randomUUID();

        String correlationId = raw(queue.properties(request.token(), Map.of()).replyTo(replyQueue).build(),
                request.json());
        Await.until("the returned answer to be counted", ANSWER_BOUND,
                () -> Operations.metricSum(app, "payonce_queue_replies_unroutable_total") >= before + 1);
        assertEquals("PAID", http.books(request.orderNo()).orderStatus(), "the command itself was paid");
        Channel late = queue.openChannel();
        late.queueDeclare(replyQueue, true, false, false, Map.of("x-queue-type", "quorum"));
        GetResponse answer = queue.awaitMessage(replyQueue, ANSWER_BOUND);

        assertEquals(correlationId, answer.getProps().getCorrelationId());
        assertEquals(200, QueueAnswer.of(answer.getProps(), answer.getBody()).status());
        late.queueDelete(replyQueue);
        late.close();
    }

    /** Another request under a command's key: a final refusal, answered and acknowledged, never dead-lettered. */
    @Test
    void keyReusedForAnotherRequest_isAnswered422Final_andAcknowledged() throws IOException {
        PayRequest request = http.newRequest();
        assertEquals(200, queue.awaitAnswer(send(request), ANSWER_BOUND).status());
        long deadBefore = queue.messageCount(DEAD);
        PayRequest other = new PayRequest(request.orderNo(), request.requestNo(), request.token(), request.amount() + 1);

        QueueAnswer refused = queue.awaitAnswer(send(other), ANSWER_BOUND);

        assertEquals(422, refused.status(), refused::toString);
        assertEquals("idempotency_key_reused", refused.code(), refused::toString);
        assertEquals(true, refused.headers().get("final"), refused::toString);
        Await.until("the outbox to empty", ANSWER_BOUND, () -> queue.messageCount(PAY) == 0);
        assertEquals(deadBefore, queue.messageCount(DEAD), "a final refusal is acknowledged, not dead-lettered");
    }

    private static String send(PayRequest request) {
        return queue.send(PAY, request.token(), request.json());
    }

    private static String raw(AMQP.BasicProperties properties, String body) {
        queue.sendRaw(PAY, properties, body.getBytes(StandardCharsets.UTF_8));
        return properties.getCorrelationId();
    }
}
