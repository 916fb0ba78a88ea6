package io.payonce.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
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

import io.payonce.support.Answer;
import io.payonce.support.Await;
import io.payonce.support.Concurrently;
import io.payonce.support.PayClient;
import io.payonce.support.PayRequest;
import io.payonce.support.QueueAnswer;
import io.payonce.support.QueueClient;
import io.restassured.path.json.JsonPath;

/**
 * Refund commands on RabbitMQ (contract sections 9 and 10) on the queue {@code payonce.refunds}, through the
 * same gate as {@code POST /refunds}, against a packaged instance and the local broker in a vhost of this
 * class's own: a refund command is refunded once (the sandbox's refund ledger) and answered as an HTTP client
 * would be, and the same refund by HTTP gets that answer byte for byte as a replay (and the reverse); copies by
 * queue and by HTTP at once are one refund at the channel with one answer; a 202 is followed by the settled
 * refund; final refusals are answers like any other; a refund command that can never get a stored answer is answered with its problem and dead-lettered to
 * {@code payonce.dead}.
 */
class QueueRefundsIT {

    private static final String REFUNDS = "payonce.refunds";
    private static final String DEAD = "payonce.dead";
    private static final Duration ANSWER_BOUND = Duration.ofSeconds(20);
    private static final Duration CALL_BOUND = Duration.ofSeconds(10);
    /** Past the channel timeout, the owner's lease, reconciliation's minimum age and its interval. */
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(30);

    private static QueueInstance instance;
    private static QueueClient queue;
    private static PayClient http;

    /** One refund a client means to make, with its own key. */
    private record Refund(String orderNo, String refundNo, String token, long amount) {

        String json() {
            return "{\"order_no\":\"" + orderNo + "\",\"refund_no\":\"" + refundNo + "\",\"amount\":" + amount + "}";
        }
    }

    /** What a client was told, by either entrance: the status, the problem's code, the replay mark, the bytes. */
    private record Told(int status, String code, boolean replayed, String body) {

        static Told of(QueueAnswer answer) {
            return new Told(answer.status(), answer.code(), answer.replayed(), answer.body());
        }

        static Told of(Answer answer) {
            return new Told(answer.status(), answer.code(), answer.isReplay(), answer.body());
        }

        /** This answer as every later copy gets it: unchanged, marked replayed. */
        Told asReplay() {
            return new Told(status, code, true, body);
        }
    }

    @BeforeAll
    static void start() throws Exception {
        instance = QueueInstance.start(QueueRefundsIT.class, "queue-refunds",
                app -> QueueInstance.settlingQuickly(app).env("PAYONCE_QUEUE_HOLD", "200ms"));
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
    void refundCommand_refundedOnce_andReplayedByHttpByteForByte() {
        PayRequest paid = paidOrder();
        Refund refund = refundOf(paid.orderNo(), 1000);

        Told byQueue = Told.of(queue.awaitAnswer(send(refund), ANSWER_BOUND));
        Told byHttp = Told.of(refundByHttp(refund));

        assertEquals(new Told(200, null, false, byQueue.body()), byQueue);
        assertTrue(byQueue.body().contains("\"status\":\"REFUNDED\""), byQueue::toString);
        assertEquals(byQueue.asReplay(), byHttp, "the HTTP copy gets the command's answer, byte for byte");
        assertEquals(new RefundLedger(1, 1, 1000), refundLedger(paid.orderNo()));
    }

    @Test
    void refundByHttp_refundedOnce_andReplayedToItsQueueCopyByteForByte() {
        PayRequest paid = paidOrder();
        Refund refund = refundOf(paid.orderNo(), paid.amount());

        Told byHttp = Told.of(refundByHttp(refund));
        Told byQueue = Told.of(queue.awaitAnswer(send(refund), ANSWER_BOUND));

        assertEquals(new Told(200, null, false, byHttp.body()), byHttp);
        assertEquals(byHttp.asReplay(), byQueue, "the command gets the HTTP answer, byte for byte");
        assertEquals(new RefundLedger(1, 1, paid.amount()), refundLedger(paid.orderNo()));
        assertEquals("REFUNDED", http.books(paid.orderNo()).orderStatus());
    }

    /** The channel answers after the service gave up: 202 now, the settled refund once reconciliation has it. */
    @Test
    void interim202_isFollowedByTheSettledRefund() {
        PayRequest paid = paidOrder();
        Refund refund = refundOf(paid.orderNo(), 500);
        sandboxRefunds("timeout_after_accept", 0, 1);

        List<QueueAnswer> answers = queue.awaitAnswers(send(refund), 2, SETTLE_BOUND);

        assertEquals(202, answers.get(0).status(), answers::toString);
        assertEquals(200, answers.get(1).status(), answers::toString);
        assertTrue(answers.get(1).body().contains("\"status\":\"REFUNDED\""), answers::toString);
        assertEquals(Told.of(answers.get(1)), Told.of(refundByHttp(refund)), "the settled answer is the stored one");
        assertEquals(new RefundLedger(1, 1, 500), refundLedger(paid.orderNo()));
    }

    @Test
    void copiesOfOneRefundByQueueAndByHttpAtOnce_oneRefundAtTheChannel_oneAnswer() {
        PayRequest paid = paidOrder();
        Refund refund = refundOf(paid.orderNo(), 700);
        // well inside the channel timeout: the first execution is refunded while the copies wait for it
        sandboxRefunds("ok", 500, 1);

        List<String> bodies = Concurrently.all(16, ANSWER_BOUND.plusSeconds(10), (group, copy) -> {
            if (copy % 2 == 0) {
                QueueAnswer answer = queue.awaitAnswer(send(refund), ANSWER_BOUND);
                return answer.status() + " " + answer.body();
            }
            Answer answer = refundByHttp(refund);
            return answer.status() + " " + answer.body();
        });

        assertEquals(1, bodies.stream().distinct().count(), () -> "one answer: " + bodies);
        assertTrue(bodies.getFirst().startsWith("200 "), bodies::toString);
        assertEquals(new RefundLedger(1, 1, 700), refundLedger(paid.orderNo()));
    }

    @Test
    void refundOfNoSuchOrder_byQueue_answered404_andReplayedByHttpByteForByte() {
        Refund refund = refundOf("ord_none_" + suffix(), 100);

        Told byQueue = Told.of(queue.awaitAnswer(send(refund), ANSWER_BOUND));
        Told byHttp = Told.of(refundByHttp(refund));

        assertEquals(new Told(404, "order_not_found", false, byQueue.body()), byQueue);
        assertEquals(byQueue.asReplay(), byHttp, "the HTTP copy gets the command's answer, byte for byte");
    }

    @Test
    void refundOfAnUnpaidOrder_byHttp_answered409_andReplayedByQueueByteForByte() {
        PayRequest unpaid = http.newRequest();
        Refund refund = refundOf(unpaid.orderNo(), 100);

        Told byHttp = Told.of(refundByHttp(refund));
        Told byQueue = Told.of(queue.awaitAnswer(send(refund), ANSWER_BOUND));

        assertEquals(new Told(409, "order_not_refundable", false, byHttp.body()), byHttp);
        assertEquals(byHttp.asReplay(), byQueue, "the command gets the HTTP answer, byte for byte");
    }

    /** A final refusal is an answer like any other: acknowledged, replayed to every copy, nothing dead-lettered. */
    @Test
    void refundBeyondThePayment_answered422_toEveryCopy_byQueueAndByHttp() throws IOException {
        PayRequest paid = paidOrder();
        Refund refund = refundOf(paid.orderNo(), paid.amount() + 1);
        long deadBefore = queue.messageCount(DEAD);

        Told first = Told.of(queue.awaitAnswer(send(refund), ANSWER_BOUND));
        Told again = Told.of(queue.awaitAnswer(send(refund), ANSWER_BOUND));
        Told byHttp = Told.of(refundByHttp(refund));

        assertEquals(new Told(422, "refund_exceeds_payment", false, first.body()), first);
        assertEquals(first.asReplay(), again);
        assertEquals(first.asReplay(), byHttp);
        assertEquals(deadBefore, queue.messageCount(DEAD), "a final refusal is not dead-lettered");
        assertEquals("PAID", http.books(paid.orderNo()).orderStatus(), "nothing refunded");
        assertEquals(new RefundLedger(0, 0, 0), refundLedger(paid.orderNo()), "nothing sent to the channel");
    }

    /**
     * Refund commands that can never get a stored answer, each answered with its problem and dead-lettered (a
     * pay command's body on the refunds queue among them: the queue decides how a body is read), and a good
     * refund command sent after them all is answered.
     */
    @Test
    void poisonRefundCommands_areAnsweredWithTheirProblem_deadLettered_andHoldNothingUp() throws IOException {
        Refund refund = refundOf("ord_none_" + suffix(), 100);
        String body = refund.json();
        long deadBefore = queue.messageCount(DEAD);
        double countedBefore = deliveries(REFUNDS, "dead_lettered");
        // correlation id -> the problem code its answer must carry
        Map<String, String> sent = new LinkedHashMap<>();
        sent.put(raw(queue.properties(refund.token(), Map.of()).build(), "{\"order_no\":"), "malformed_json");
        sent.put(raw(queue.properties(refund.token(), Map.of()).build(),
                "{\"order_no\":\"" + refund.orderNo() + "\",\"amount\":100}"), "invalid_request");
        sent.put(raw(queue.properties(refund.token(), Map.of()).build(),
                "{\"order_no\":\"" + refund.orderNo() + "\",\"request_no\":\"req_1\",\"amount\":100}"),
                "invalid_request");
        sent.put(raw(queue.properties(null, Map.of()).build(), body), "idempotency_key_missing");
        sent.put(raw(queue.properties(refund.token(), Map.of()).userId(null).build(), body), "merchant_required");
        sent.put(raw(queue.properties(refund.token(), Map.of()).build(),
                body.replace("{", "{\"merchant_id\":\"another_merchant\",")), "invalid_request");

        QueueAnswer answered = queue.awaitAnswer(send(refund), ANSWER_BOUND);

        sent.forEach((correlationId, code) -> {
            QueueAnswer answer = queue.awaitAnswer(correlationId, ANSWER_BOUND);
            assertEquals(code, answer.code(), answer::toString);
            assertTrue(answer.body().startsWith("{\"type\":\"urn:payonce:problem:" + code), answer::toString);
        });
        Await.until("the refund commands on " + DEAD, ANSWER_BOUND,
                () -> queue.messageCount(DEAD) == deadBefore + sent.size());
        assertEquals(404, answered.status(), answered::toString);
        assertEquals("order_not_found", answered.code(), answered::toString);
        assertEquals(countedBefore + sent.size(), deliveries(REFUNDS, "dead_lettered"), "counted by their queue");
    }

    /** The channel's refunds of an order: distinct successful ones, refund calls that arrived, the sum refunded. */
    private record RefundLedger(long refunds, long attempts, long refundedAmount) {
    }

    private static RefundLedger refundLedger(String orderNo) {
        JsonPath ledger = http.call(CALL_BOUND).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().statusCode(200).extract().jsonPath();
        return new RefundLedger(ledger.getLong("refunds"), ledger.getLong("refund_attempts"),
                ledger.getLong("refunded_amount"));
    }

    /** The next {@code count} refunds at the sandbox take {@code mode} after {@code latencyMs}. */
    private static void sandboxRefunds(String mode, long latencyMs, int count) {
        http.call(CALL_BOUND).body(Map.of("operation", "refund", "mode", mode, "latency_ms", latencyMs,
                "count", count)).put("/sandbox/behavior").then().statusCode(200);
    }

    private static PayRequest paidOrder() {
        PayRequest paid = http.newRequest();
        assertEquals(200, http.pay(paid).status(), "the order is paid first");
        return paid;
    }

    private static Refund refundOf(String orderNo, long amount) {
        return new Refund(orderNo, "rfd_" + suffix(), newToken(), amount);
    }

    private static String newToken() {
        return http.call(CALL_BOUND).post("/tokens").then().statusCode(201).extract().path("token");
    }

    private static Answer refundByHttp(Refund refund) {
        return Answer.of(() -> http.call(CALL_BOUND).header("Idempotency-Key", "\"" + refund.token() + "\"")
                .body(refund.json()).post("/refunds"));
    }

    private static String send(Refund refund) {
        return queue.send(REFUNDS, refund.token(), refund.json());
    }

    private static String raw(AMQP.BasicProperties properties, String body) {
        queue.sendRaw(REFUNDS, properties, body.getBytes(StandardCharsets.UTF_8));
        return properties.getCorrelationId();
    }

    /** The instance's count of deliveries from {@code queue} that ended in {@code outcome}. */
    private static double deliveries(String queueName, String outcome) {
        String metrics = instance.app.management().get("/q/metrics").then().statusCode(200).extract().asString();
        return metrics.lines()
                .filter(line -> line.startsWith("payonce_queue_deliveries_total{")
                        && line.contains("outcome=\"" + outcome + "\"")
                        && line.contains("queue=\"" + queueName + "\""))
                .mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)))
                .sum();
    }

    private static String suffix() {
        return UUID.randomUUID().toString().replace("-", "").substring(0, 16);
    }
}
