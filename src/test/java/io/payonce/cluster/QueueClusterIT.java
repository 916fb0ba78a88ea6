package io.payonce.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
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

import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Books;
import io.payonce.support.PayRequest;
import io.payonce.support.QueueAnswer;
import io.payonce.support.QueueClient;
import io.payonce.support.RabbitCluster;
import io.payonce.support.RabbitVhost;
import io.payonce.support.TcpProxy;

/**
 * The queue entrance on a three-node RabbitMQ cluster, its command queues quorum queues replicated on all three,
 * with two instances consuming: instance A given every node's address, instance B reaching node 1 through a
 * proxy the test controls (then nodes 2 and 3). While commands and their copies flow, the leader of
 * {@code payonce.pay} is killed with SIGKILL and started again, and B's connection to node 1 is cut and healed;
 * either way every command is charged once, every producer gets its final answer (the same for every copy),
 * nothing that executed is in {@code payonce.dead}, and HTTP keeps serving.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class QueueClusterIT {

    private static final String PAY = "payonce.pay";
    private static final String DEAD = "payonce.dead";
    private static final int COMMANDS = 24;
    private static final Duration SEND_EVERY = Duration.ofMillis(250);
    /** Past an election, a node's restart, reconnections, redeliveries and the answers' outbox. */
    private static final Duration FINAL_BOUND = Duration.ofSeconds(120);

    private static RabbitCluster cluster;
    private static RabbitVhost vhost;
    private static TcpProxy toNode1;
    private static AppProcess a;
    private static AppProcess b;
    private static PayClient http;
    private static RabbitVhost.Credentials merchant;

    @BeforeAll
    static void start() throws Exception {
        cluster = RabbitCluster.shared();
        vhost = cluster.vhost(QueueClusterIT.class);
        String merchantId = "merchant_qc_" + UUID.randomUUID().toString().substring(0, 8);
        merchant = vhost.user(merchantId);
        toNode1 = new TcpProxy(cluster.port(1));
        a = instance("queue-cluster-a", cluster.addresses());
        b = instance("queue-cluster-b", RabbitCluster.HOST + ":" + toNode1.port() + "," + RabbitCluster.HOST + ":"
                + cluster.port(2) + "," + RabbitCluster.HOST + ":" + cluster.port(3));
        AppProcess.startAll(a, b);
        http = new PayClient(a, merchantId);
        http.sandbox("ok", 0, 0);
        try (QueueClient probe = producerAvoiding(0)) {
            probe.awaitQueue(PAY, Duration.ofSeconds(30));
        }
        cluster.awaitMembers(vhost.name(), PAY, RabbitCluster.SIZE);
    }

    @AfterAll
    static void stop() throws Exception {
        AppProcess.closeAll(a, b);
        if (toNode1 != null) {
            toNode1.close();
        }
        if (vhost != null) {
            vhost.close();
        }
    }

    @Test
    @Order(1)
    void leadersNodeKilledMidStream_andStartedAgain_eachCommandPaidOnce_everyProducerAnswered() throws Exception {
        int leader = cluster.leaderOf(vhost.name(), PAY);
        try (QueueClient producer = producerAvoiding(leader)) {
            Runnable fault = () -> {
                cluster.kill9(leader);
                assertEquals(200, http.pay(http.newRequest()).status(), "HTTP serves while a broker node is down");
                sleep(Duration.ofSeconds(5));
                cluster.start(leader);
            };
            assertEachPaidOnceAndAnswered(producer, fault);
        }
        cluster.awaitMembers(vhost.name(), PAY, RabbitCluster.SIZE);
    }

    @Test
    @Order(2)
    void oneInstancesConnectionToANodeCutAndHealed_eachCommandPaidOnce_everyProducerAnswered() throws Exception {
        try (QueueClient producer = producerAvoiding(1)) {
            Runnable fault = () -> {
                toNode1.cut();
                sleep(Duration.ofSeconds(5));
                toNode1.restore();
            };
            assertEachPaidOnceAndAnswered(producer, fault);
        }
    }

    /**
     * Sends {@link #COMMANDS} commands, every other one twice, one every {@link #SEND_EVERY}, with {@code fault}
     * run from a third of the way in; then every command's final answer, one charge per order, nothing dead.
     */
    private static void assertEachPaidOnceAndAnswered(QueueClient producer, Runnable fault) throws Exception {
        long deadBefore = producer.messageCount(DEAD);
        Map<PayRequest, List<String>> sent = new LinkedHashMap<>();
        Thread faulting = null;
        for (int i = 0; i < COMMANDS; i++) {
            if (i == COMMANDS / 3) {
                faulting = new Thread(fault, "queue-cluster-fault");
                faulting.start();
            }
            PayRequest request = http.newRequest();
            List<String> copies = new ArrayList<>();
            copies.add(sendRetrying(producer, request));
            if (i % 2 == 0) {
                copies.add(sendRetrying(producer, request));
            }
            sent.put(request, copies);
            sleep(SEND_EVERY);
        }
        faulting.join(FINAL_BOUND.toMillis());

        sent.forEach((request, copies) -> {
            List<QueueAnswer> finals = new ArrayList<>();
            for (String correlationId : copies) {
                Await.until("the final answer to " + correlationId, FINAL_BOUND,
                        () -> producer.answers(correlationId).stream().anyMatch(QueueClusterIT::isFinal));
                producer.answers(correlationId).stream().filter(QueueClusterIT::isFinal).forEach(finals::add);
            }
            assertEquals(1, finals.stream().map(answer -> answer.status() + " " + answer.body()).distinct().count(),
                    () -> "one final answer for every copy of " + request + ": " + finals);
            assertEquals(200, finals.getFirst().status(), finals::toString);
            Books books = http.books(request.orderNo());
            assertEquals(1, books.charges(), books::toString);
            assertEquals(1, books.payments().size(), books::toString);
        });
        assertEquals(deadBefore, producer.messageCount(DEAD), "nothing that executed is dead-lettered");
        Answer overHttp = http.pay(http.newRequest());
        assertEquals(200, overHttp.status(), overHttp::toString);
    }

    /**
     * Publishes with the broker's confirm, again after a pause when the publish is refused or unconfirmed (its
     * queue's leader being elected anew): a producer's own retry with the same key and body, which PayOnce
     * executes once.
     */
    private static String sendRetrying(QueueClient producer, PayRequest request) {
        AssertionError last = null;
        for (int attempt = 0; attempt < 20; attempt++) {
            try {
                return producer.send(PAY, request.token(), request.json());
            } catch (RuntimeException | AssertionError refused) {
                last = refused instanceof AssertionError error ? error : new AssertionError(refused);
                sleep(Duration.ofMillis(500));
            }
        }
        throw last;
    }

    private static boolean isFinal(QueueAnswer answer) {
        return Boolean.TRUE.equals(answer.headers().get("final"));
    }

    /** A producer connected to a node other than {@code avoided} (0: node 1), so a fault there leaves it up. */
    private static QueueClient producerAvoiding(int avoided) throws IOException {
        int node = avoided == 3 ? 2 : 3;
        return QueueClient.connect(RabbitCluster.HOST, cluster.port(node), vhost.name(), merchant);
    }

    private static AppProcess instance(String name, String addresses) throws IOException {
        AppProcess app = AppProcess.named(name).env("PAYONCE_QUEUE_ENABLED", "true")
                .env("PAYONCE_QUEUE_HOLD", "500ms")
                .env("PAYONCE_CHANNEL_TIMEOUT", "1s")
                .env("PAYONCE_IDEMPOTENCY_LEASE", "4s")
                .env("PAYONCE_RECONCILE_INTERVAL", "1s")
                .env("PAYONCE_RECONCILE_MIN_AGE", "2s");
        vhost.appEnv().forEach(app::env);
        return app.env("RABBITMQ_ADDRESSES", addresses);
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
