package io.payonce.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayRequest;
import io.payonce.support.PrivateRabbit;
import io.payonce.support.QueueAnswer;
import io.payonce.support.QueueClient;
import io.payonce.support.RabbitVhost;
import io.payonce.support.TcpProxy;
import io.payonce.support.WorkerAndSandbox;

/**
 * The queue entrance when its broker connection or its instance fails, on a private RabbitMQ node (the shared
 * one is never stopped): the worker W reaches the node through a TCP proxy this test cuts; the node's listener
 * is stopped and started again; W is killed (SIGKILL) holding deliveries and a charge in flight, and started
 * again. Each time consumption resumes by itself, every command is paid exactly once (the channel's ledger) and
 * answered with the same answer however often it is sent.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class QueueRecoveryIT {

    private static final String PAY = "payonce.pay";
    private static final Duration ANSWER_BOUND = Duration.ofSeconds(30);
    /** Past W's lease (8 s) and reconciliation's minimum age (6 s) after a restart. */
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(60);
    private static final Duration OUTAGE = Duration.ofSeconds(3);

    private static PrivateRabbit broker;
    private static RabbitVhost vhost;
    private static RabbitVhost.Credentials user;
    private static TcpProxy proxy;
    private static WorkerAndSandbox instances;
    private static String merchant;
    private static QueueClient queue;
    private static PayClient http;
    private static PayClient channel;

    @BeforeAll
    static void start() throws Exception {
        broker = PrivateRabbit.shared();
        vhost = broker.vhost(QueueRecoveryIT.class);
        merchant = "merchant_qr_" + UUID.randomUUID().toString().substring(0, 8);
        user = vhost.user(merchant);
        proxy = new TcpProxy(broker.port());
        instances = WorkerAndSandbox.named("queue-recovery")
                .worker("PAYONCE_QUEUE_ENABLED", "true")
                .worker("PAYONCE_QUEUE_HOLD", "500ms")
                .worker("PAYONCE_CHANNEL_TIMEOUT", "5s")
                .worker("PAYONCE_IDEMPOTENCY_LEASE", "8s")
                .worker("PAYONCE_RECONCILE_MIN_AGE", "6s");
        vhost.appEnv().forEach(instances::worker);
        instances.worker("RABBITMQ_PORT", Integer.toString(proxy.port()));
        instances.start(merchant);
        queue = QueueClient.connect(vhost, user);
        queue.awaitQueue(PAY, ANSWER_BOUND);
        http = instances.client();
        channel = instances.channel();
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (queue != null) {
            queue.close();
        }
        if (instances != null) {
            instances.close();
        }
        if (proxy != null) {
            proxy.close();
        }
        if (vhost != null) {
            vhost.close();
        }
    }

    /** W's connection reset mid-stream and refused for a while: commands sent meanwhile wait in the queue. */
    @Test
    @Order(1)
    void connectionCut_consumptionResumes_nothingLost_nothingChargedTwice() throws Exception {
        channel.sandbox("ok", 300, 1_000);
        Map<String, PayRequest> sent = new LinkedHashMap<>();
        for (int i = 0; i < 10; i++) {
            if (i == 4) {
                proxy.cut();
            }
            if (i == 7) {
                Thread.sleep(OUTAGE.toMillis());
                proxy.restore();
            }
            PayRequest request = http.newRequest();
            sent.put(send(request), request);
        }

        assertEachPaidOnce(sent);
        channel.sandbox("ok", 0, 0);
    }

    /**
     * The broker's listener stopped and started again: every connection dropped, W's and the sender's; HTTP
     * payments are served meanwhile and W stays ready.
     */
    @Test
    @Order(2)
    void brokerListenerStoppedAndStarted_consumptionResumes_nothingLost() throws Exception {
        channel.sandbox("ok", 300, 1_000);
        List<PayRequest> before = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            PayRequest request = http.newRequest();
            send(request);
            before.add(request);
        }

        broker.stopApp();
        Await.until("W's readiness to report the broker degraded", ANSWER_BOUND,
                () -> brokerState().equals("degraded"));
        // the HTTP entrance serves meanwhile, and the instance stays ready
        PayRequest overHttp = http.newRequest();
        assertEquals(200, http.pay(overHttp).status(), "an HTTP payment while the broker is down");
        instances.worker().management().get("/q/health/ready").then().statusCode(200);
        Thread.sleep(OUTAGE.toMillis());
        broker.startApp();
        queue.close();
        queue = QueueClient.connect(vhost, user);
        Await.until("W to reach the broker again", ANSWER_BOUND, () -> brokerState().equals("up"));

        // the sender's reply queue went with its connection: it sends each command again, with its key
        Map<String, PayRequest> again = new LinkedHashMap<>();
        for (PayRequest request : before) {
            again.put(send(request), request);
        }
        PayRequest after = http.newRequest();
        again.put(send(after), after);
        assertEachPaidOnce(again);
        channel.sandbox("ok", 0, 0);
    }

    /**
     * W killed with commands delivered and unacknowledged, their charges at the channel: the broker delivers them
     * again to W started anew, whose gate waits out the dead owner, and each is settled once, on the channel's
     * word.
     */
    @Test
    @Order(3)
    void consumerKilledWithDeliveriesUnackedAndChargesInFlight_restarted_eachPaidOnce() throws Exception {
        channel.sandbox("ok", 3_000, 3);
        Map<String, PayRequest> sent = new LinkedHashMap<>();
        for (int i = 0; i < 3; i++) {
            PayRequest request = http.newRequest();
            sent.put(send(request), request);
        }
        Await.until("the three charges at the channel", ANSWER_BOUND, () -> sent.values().stream()
                .allMatch(request -> channel.ledger(request.orderNo()).attempts() == 1));

        instances.worker().kill();
        instances.worker().start().awaitReady();

        assertEachPaidOnce(sent);
        for (PayRequest request : sent.values()) {
            assertEquals(1, channel.ledger(request.orderNo()).attempts(), "no charge was sent again");
        }
    }

    /** Every command is answered 200, all its answers alike, and its order charged once. */
    private static void assertEachPaidOnce(Map<String, PayRequest> sent) {
        sent.forEach((correlationId, request) -> {
            QueueAnswer first = Await.until("the final answer to " + correlationId, SETTLE_BOUND,
                    () -> queue.answers(correlationId), answers -> answers.stream().anyMatch(a -> a.status() != 202))
                    .stream().filter(a -> a.status() != 202).findFirst().orElseThrow();
            assertEquals(200, first.status(), () -> "paid: " + queue.answers(correlationId));
            assertTrue(queue.answers(correlationId).stream().filter(a -> a.status() != 202)
                    .allMatch(a -> a.body().equals(first.body())), () -> "alike: " + queue.answers(correlationId));
            Books books = channel.books(request.orderNo());
            assertEquals(1, books.charges(), books::toString);
            assertEquals("PAID", books.orderStatus(), books::toString);
        });
    }

    private static String brokerState() {
        return instances.worker().management().get("/q/health/ready").then().extract()
                .path("checks.find { it.name == 'Queue entrance' }.data.broker");
    }

    private static String send(PayRequest request) {
        return queue.send(PAY, request.token(), request.json());
    }
}
