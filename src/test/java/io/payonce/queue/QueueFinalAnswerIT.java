package io.payonce.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;

import io.payonce.support.Await;
import io.payonce.support.MysqlProxy;
import io.payonce.support.Operations;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayRequest;
import io.payonce.support.QueueAnswer;
import io.payonce.support.QueueClient;

/**
 * Every producer learns its command's final outcome (contract section 9): a command is acknowledged only once its
 * final answer is stored or owed by a record that recovery settles, and dead-lettered only when it never executed,
 * whatever fails meanwhile. The instance reaches MariaDB through a proxy the tests control (the sandbox's own
 * connection goes direct), copies wait a short bound, and held deliveries come back quickly.
 */
class QueueFinalAnswerIT {

    private static final String PAY = "payonce.pay";
    private static final String DEAD = "payonce.dead";
    private static final Duration ANSWER_BOUND = Duration.ofSeconds(30);
    private static final Duration DATABASE_TIMEOUT = Duration.ofSeconds(1);
    private static final int RETRIES = 2;

    private static MysqlProxy database;
    private static QueueInstance instance;
    private static QueueClient queue;
    private static PayClient http;

    @BeforeAll
    static void start() throws Exception {
        URI direct = URI.create(System.getenv().getOrDefault("QUARKUS_DATASOURCE_JDBC_URL",
                "jdbc:mariadb://127.0.0.1:3306/test").substring("jdbc:".length()));
        database = new MysqlProxy(direct.getPort());
        String viaProxy = "mysql://127.0.0.1:" + database.port() + direct.getPath();
        instance = QueueInstance.start(QueueFinalAnswerIT.class, "queue-final-answer", app -> app
                .env("QUARKUS_DATASOURCE_REACTIVE_URL", viaProxy)
                .env("PAYONCE_DATABASE_TIMEOUT", DATABASE_TIMEOUT.toMillis() + "ms")
                .env("PAYONCE_CHANNEL_TIMEOUT", "3s")
                .env("PAYONCE_IDEMPOTENCY_LEASE", "6s")
                .env("PAYONCE_RECONCILE_MIN_AGE", "4s")
                .env("PAYONCE_IDEMPOTENCY_WAIT_TIMEOUT", "300ms")
                .env("PAYONCE_QUEUE_RETRIES", Integer.toString(RETRIES))
                .env("PAYONCE_QUEUE_HOLD", "200ms"));
        queue = instance.queue;
        http = instance.http;
    }

    @AfterEach
    void heal() {
        database.disarm();
        database.restore();
        http.sandbox("ok", 0, 0);
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (instance != null) {
            instance.close();
        }
        if (database != null) {
            database.close();
        }
    }

    /**
     * A copy delivered while the first execution still charges outlasts its wait again and again, past the
     * entrance's retries: it is held and delivered again, never dead-lettered, and gets the first execution's
     * answer once there is one.
     */
    @Test
    void copyWhileTheFirstExecutionCharges_isHeldPastItsRetries_neverDeadLettered_andGetsTheFirstAnswer()
            throws IOException {
        PayRequest request = http.newRequest();
        long deadBefore = queue.messageCount(DEAD);
        http.sandbox("ok", 2_500, 1);
        String first = send(request);
        Await.until("the first execution's payment record", ANSWER_BOUND,
                () -> http.books(request.orderNo()).payments().size() == 1);

        String copy = send(request);
        AtomicBoolean sawHeld = new AtomicBoolean();
        Await.until("the first execution's answer", ANSWER_BOUND, () -> {
            if (Operations.metricSum(instance.app, "payonce_queue_held") >= 1) {
                sawHeld.set(true);
            }
            return !queue.answers(first).isEmpty();
        });
        QueueAnswer copyAnswer = finalAnswer(copy);

        QueueAnswer firstAnswer = finalAnswer(first);
        assertEquals(200, firstAnswer.status(), firstAnswer::toString);
        assertEquals(200, copyAnswer.status(), () -> "the copy's answers: " + queue.answers(copy));
        assertEquals(firstAnswer.body(), copyAnswer.body(), "one answer for both");
        assertTrue(copyAnswer.replayed(), copyAnswer::toString);
        assertEquals(deadBefore, queue.messageCount(DEAD), "nothing that executed is dead-lettered");
        assertTrue(sawHeld.get(), "the copy was held while the first execution ran");
        assertEquals(1, http.books(request.orderNo()).charges());
    }

    /**
     * The channel refuses the first charge before accepting it, and the answer to the undo's COMMIT comes after the
     * database timeout: the undo is resolved, found done, and the command runs again, paid; never a 202 acknowledged
     * with nothing behind it.
     */
    @Test
    void undoWhoseCommitAnswerComesLate_isResolved_andTheCommandRunsAgainUntilPaid() {
        PayRequest request = http.newRequest();
        http.sandbox("fail_before_accept", 1_000, 1);

        String correlationId = send(request);
        Await.until("the opening's payment record", ANSWER_BOUND,
                () -> http.books(request.orderNo()).payments().size() == 1);
        MysqlProxy.Hold held = database.holdNextCommitAnswer(DATABASE_TIMEOUT.multipliedBy(3));
        held.awaitCaught(ANSWER_BOUND);
        QueueAnswer paid = finalAnswer(correlationId);

        assertEquals(200, paid.status(), () -> "answers: " + queue.answers(correlationId));
        assertTrue(queue.answers(correlationId).stream().noneMatch(answer -> answer.status() == 202),
                () -> "no 202 for a payment that was taken back: " + queue.answers(correlationId));
        Books books = http.books(request.orderNo());
        assertEquals(1, books.charges(), books::toString);
        assertEquals("PAID", books.orderStatus(), books::toString);
    }

    /**
     * Commands that never executed and never can, as sent, are answered with their problem and dead-lettered while
     * the database does not answer at all: such an answer needs no database.
     */
    @Test
    void refusedCommands_areAnsweredAndDeadLettered_whileTheDatabaseIsDown() throws IOException {
        long deadBefore = queue.messageCount(DEAD);
        PayRequest request = http.newRequest();
        database.cut();

        String malformed = raw(queue.properties(request.token(), Map.of()).build(), "{\"order_no\":");
        String invalidToken = queue.send(PAY, "tok_not-a-token-of-this-service", request.json());

        assertEquals("malformed_json", queue.awaitAnswer(malformed, ANSWER_BOUND).code());
        QueueAnswer refused = queue.awaitAnswer(invalidToken, ANSWER_BOUND);
        assertEquals("invalid_idempotency_token", refused.code(), refused::toString);
        assertEquals(true, refused.headers().get("final"), refused::toString);
        Await.until("both commands on " + DEAD, ANSWER_BOUND, () -> queue.messageCount(DEAD) == deadBefore + 2);
    }

    /** The broker cancels the consumer (its queue deleted): the queue is declared again and consumed again. */
    @Test
    void commandQueueDeletedUnderTheConsumer_isDeclaredAndConsumedAgain() throws Exception {
        try (Channel admin = queue.openChannel()) {
            admin.queueDelete(PAY);
        }
        queue.awaitQueue(PAY, ANSWER_BOUND);
        PayRequest request = http.newRequest();

        QueueAnswer paid = queue.awaitAnswer(send(request), ANSWER_BOUND);

        assertEquals(200, paid.status(), paid::toString);
    }

    /** The command's final answer, once the entrance has published it (answers of one command come in any order). */
    private static QueueAnswer finalAnswer(String correlationId) {
        Await.until("the final answer to " + correlationId, ANSWER_BOUND,
                () -> queue.answers(correlationId).stream().anyMatch(QueueFinalAnswerIT::isFinal));
        List<QueueAnswer> finals = queue.answers(correlationId).stream().filter(QueueFinalAnswerIT::isFinal).toList();
        assertEquals(1, finals.stream().map(answer -> answer.status() + answer.body()).distinct().count(),
                () -> "every final answer of one command is the same: " + finals);
        return finals.getFirst();
    }

    private static boolean isFinal(QueueAnswer answer) {
        return Boolean.TRUE.equals(answer.headers().get("final"));
    }

    private static String send(PayRequest request) {
        return queue.send(PAY, request.token(), request.json());
    }

    private static String raw(AMQP.BasicProperties properties, String body) {
        queue.sendRaw(PAY, properties, body.getBytes(StandardCharsets.UTF_8));
        return properties.getCorrelationId();
    }
}
