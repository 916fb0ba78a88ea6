package io.payonce.chaos;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ShutdownSignalException;

import io.payonce.chaos.History.Attempt;
import io.payonce.chaos.History.OrderSeen;
import io.payonce.chaos.History.QueueCopy;
import io.payonce.chaos.History.Refund;
import io.payonce.chaos.History.Request;
import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.Gateway;
import io.payonce.support.PayClient;
import io.payonce.support.QueueClient;
import io.restassured.config.HttpClientConfig;
import io.restassured.config.RestAssuredConfig;
import io.restassured.http.ContentType;
import io.restassured.path.json.JsonPath;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;

/**
 * The clients' side of the wire: a request goes through one of the gateways (with the merchant's API key,
 * as a real client's does), or now and then straight to one instance (as a service inside the network
 * would, naming its merchant itself), or as a command on the pay queue (published as the merchant's broker
 * user, through a connection of the merchant's own straight to the broker, its answers on a durable quorum
 * reply queue of the merchant's, read again by a new connection when the broker node was killed); and every
 * copy of a payment and its answer, or the broken connection that ended it, goes into the {@link History}.
 */
final class Traffic implements AutoCloseable {

    /**
     * A client's patience for one answer: past the gateway's read timeout, which scripts/gateway.sh derives from
     * the instances' bounds (16 s for ChaosSettings'), and so past any bound of the service's own.
     */
    static final Duration PATIENCE = Duration.ofSeconds(20);
    /** Share of copies sent to an instance directly: their waits are the service's own, not cut by nginx. */
    private static final int DIRECT_PERCENT = 30;
    /** How often a client waiting for a queue command's answer looks at its reply queue's answers. */
    private static final long QUEUE_LOOK_MS = 50;
    /** How long the answers waiting in a reply queue take to be read once the run has settled. */
    private static final Duration DRAIN_BOUND = Duration.ofSeconds(30);
    /** How long the answers a reply queue handed over last take to be collected by its consumer. */
    private static final long QUEUE_DRAIN_PAUSE_MS = 1_000;
    /** The way of a copy sent as a queue command. */
    static final Route QUEUE = new Route(History.QueueCopy.ROUTE, null, null, -1);

    /**
     * The way one copy takes: a gateway, or an instance directly ({@code instanceIndex} in the deployment's, else
     * -1), or the queue (neither).
     */
    record Route(String name, Gateway gateway, AppProcess instance, int instanceIndex) {

        boolean byQueue() {
            return gateway == null && instance == null;
        }

        RequestSpecification spec(String merchant, Duration timeout) {
            if (gateway == null) {
                return new PayClient(instance.port(), merchant).call(timeout);
            }
            int ms = (int) timeout.toMillis();
            return gateway.as(merchant).contentType(ContentType.JSON).config(RestAssuredConfig.config()
                    .httpClient(HttpClientConfig.httpClientConfig()
                            .setParam("http.connection.timeout", 2_000)
                            .setParam("http.socket.timeout", ms)));
        }
    }

    private final List<Route> gatewayRoutes;
    private final List<Route> directRoutes;
    private final History history;
    private final Deployment deployment;
    /**
     * Each merchant's producer and reply queue; read again by a new connection should its connection close (the
     * broker node killed), or replaced, and the loss reported, should the reply queue be gone.
     */
    private final Map<String, QueueClient> queues = new ConcurrentHashMap<>();
    private final List<String> errors = new CopyOnWriteArrayList<>();

    /** Connects every merchant's queue client. */
    Traffic(Deployment deployment, History history) throws IOException {
        this.history = history;
        this.deployment = deployment;
        for (String merchant : deployment.brokerMerchants()) {
            queues.put(merchant, QueueClient.connect(deployment.broker(), deployment.brokerUser(merchant)));
        }
        this.gatewayRoutes = deployment.gateways().stream()
                .map(g -> new Route("gw" + deployment.gateways().indexOf(g), g, null, -1)).toList();
        List<AppProcess> instances = deployment.instances();
        this.directRoutes = IntStream.range(0, instances.size())
                .mapToObj(i -> new Route("direct" + i, null, instances.get(i), i)).toList();
    }

    /**
     * Mostly a gateway, sometimes an instance directly: instance {@code slot} modulo their number, so that
     * copies a client sends side by side with consecutive slots go to different instances.
     */
    Route route(Random random, int slot) {
        if (random.nextInt(100) < DIRECT_PERCENT) {
            return directRoutes.get(Math.floorMod(slot, directRoutes.size()));
        }
        return gatewayRoutes.get(random.nextInt(gatewayRoutes.size()));
    }

    /** Anywhere: a gateway, or a random instance directly. */
    Route anyRoute(Random random) {
        return route(random, random.nextInt(directRoutes.size()));
    }

    /**
     * One copy of the request, recorded with its answer; {@code lane} tells copies a client sent side by side
     * apart. A {@code timeout} short of an answer is a client hanging up.
     */
    Answer pay(Request request, int lane, Route route, Duration timeout, boolean hangUp, String phase) {
        if (route.byQueue()) {
            return command(request, lane, timeout, hangUp, phase);
        }
        long sentAt = history.nowMs();
        Answer answer = Answer.of(() -> request.intent.on(route.spec(request.merchant, timeout)).post("/pay"));
        request.add(new Attempt(lane, route.name(), route.instanceIndex(), sentAt, phase, hangUp, answer,
                System.currentTimeMillis()));
        if (Answers.isPaid(answer)) {
            history.sawOrder(new OrderSeen(request.merchant, request.intent.orderNo(), sentAt, history.nowMs(), "PAID",
                    -1, -1, "200 to " + request.intent.requestNo()));
        }
        return answer;
    }

    /** One copy of the refund by HTTP, recorded with its answer, as {@link #pay} sends a payment's. */
    Answer refund(Refund refund, int lane, Route route, Duration timeout, boolean hangUp, String phase) {
        long sentAt = history.nowMs();
        Answer answer = Answer.of(() -> route.spec(refund.merchant, timeout)
                .header("Idempotency-Key", "\"" + refund.token + "\"").body(refund.body()).post("/refunds"));
        refund.add(new Attempt(lane, route.name(), route.instanceIndex(), sentAt, phase, hangUp, answer,
                System.currentTimeMillis()));
        return answer;
    }

    /**
     * One copy of the request as a queue command (the same token and body as an HTTP copy's), recorded with every
     * answer it gets; waits up to {@code timeout} for a final answer, or the entrance giving the command up, and
     * answers the copy's answer then (a 202, or none, when neither came). A publish the broker did not confirm is
     * a copy with no answer, like a refused connection.
     */
    private Answer command(Request request, int lane, Duration timeout, boolean hangUp, String phase) {
        long sentAt = history.nowMs();
        long sentAtEpoch = System.currentTimeMillis();
        QueueClient client;
        String correlationId = null;
        String error = null;
        try {
            client = queueClient(request.merchant);
            correlationId = client.send(Deployment.PAY, request.intent.token(), request.intent.json());
        } catch (IOException | RuntimeException refused) {
            client = null;
            error = "not sent: " + refused;
        }
        QueueCopy copy = new QueueCopy(lane, sentAt, sentAtEpoch, phase, hangUp,
                client == null ? null : client.replyQueue(), correlationId, error);
        request.add(copy);
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            while (client != null && System.nanoTime() < deadline) {
                copy.heard(client.answers(correlationId), history.nowMs());
                Answer answer = copy.attempt().answer();
                if (Answers.isFinal(answer) || (answer.answered() && answer.status() != 202)) {
                    break;
                }
                Thread.sleep(QUEUE_LOOK_MS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Answer answer = copy.attempt().answer();
        if (Answers.isPaid(answer)) {
            history.sawOrder(new OrderSeen(request.merchant, request.intent.orderNo(), sentAt, history.nowMs(), "PAID",
                    -1, -1, "200 by queue to " + request.intent.requestNo()));
        }
        return answer;
    }

    /**
     * The merchant's queue client; should its connection have closed (the broker node was killed), a new
     * connection reading the same reply queue, which kept the answers that came meanwhile; should that queue be
     * gone, a new one, the copies sent on the old one marked as having lost their reply queue, and the loss
     * reported. Fails while the broker is down.
     */
    private synchronized QueueClient queueClient(String merchant) throws IOException {
        QueueClient client = queues.get(merchant);
        if (client.isOpen()) {
            return client;
        }
        try {
            QueueClient resumed = client.resume();
            queues.put(merchant, resumed);
            return resumed;
        } catch (IOException e) {
            if (!(e.getCause() instanceof ShutdownSignalException closed
                    && closed.getReason() instanceof AMQP.Channel.Close close && close.getReplyCode() == AMQP.NOT_FOUND)) {
                throw e; // no connection: the broker is down, or not up yet
            }
            // the broker closed the channel that looked for the reply queue: it is gone
        }
        String lost = client.replyQueue();
        int marked = 0;
        for (Request request : history.requests()) {
            for (QueueCopy copy : request.queueCopies()) {
                if (request.merchant.equals(merchant) && copy.correlationId != null && lost.equals(copy.replyQueue)) {
                    copy.replyLost();
                    marked++;
                }
            }
        }
        errors.add(String.format("%.1f s the queue client of %s lost its connection; %d command(s) sent on it judged"
                + " without the answers that came later", history.nowMs() / 1000.0, merchant, marked));
        client.close();
        QueueClient fresh = QueueClient.connect(deployment.broker(), deployment.brokerUser(merchant));
        queues.put(merchant, fresh);
        return fresh;
    }

    /**
     * Hears every answer that came to a queue command after its client stopped waiting: before the check, once
     * every answer owed has been sent. Each reply queue is read to its end first.
     */
    void hearLateAnswers() {
        for (String merchant : List.copyOf(queues.keySet())) {
            try {
                QueueClient client = queueClient(merchant);
                Await.until("the reply queue of " + merchant + " read to its end", DRAIN_BOUND,
                        () -> client.messageCount(client.replyQueue()) == 0);
            } catch (IOException | RuntimeException | AssertionError e) {
                errors.add("reading the reply queue of " + merchant + " to its end: " + e);
            }
        }
        try {
            // the last answers taken off the queues are still on their way through the consumers
            Thread.sleep(QUEUE_DRAIN_PAUSE_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (Request request : history.requests()) {
            QueueClient client = queues.get(request.merchant);
            for (QueueCopy copy : request.queueCopies()) {
                if (copy.correlationId != null && client.replyQueue().equals(copy.replyQueue)) {
                    copy.heard(client.answers(copy.correlationId), history.nowMs());
                }
            }
        }
        queues.forEach((merchant, client) -> {
            if (!client.isOpen()) {
                errors.add("the queue client of " + merchant + " had lost its connection by the check");
            }
        });
    }

    /** What went wrong on the harness's side of the queue (not a violation of the service's). */
    List<String> errors() {
        return List.copyOf(errors);
    }

    @Override
    public void close() {
        queues.values().forEach(QueueClient::close);
    }

    /** Creates the order through a gateway, trying again while it cannot be done; false when it never was. */
    boolean createOrder(String merchant, String orderNo, Random random, long untilMs) throws InterruptedException {
        Map<String, Object> body = Map.of("order_no", orderNo, "amount", PayClient.AMOUNT, "currency", PayClient.CURRENCY);
        for (int tries = 0; tries < 20 && history.nowMs() < untilMs; tries++) {
            try {
                int status = anyRoute(random).spec(merchant, PATIENCE).body(body).post("/orders").statusCode();
                if (status == 201 || status == 200) {
                    return true;
                }
            } catch (Exception brokenConnection) {
                // tried again below
            }
            Thread.sleep(200 + random.nextInt(600));
        }
        return false;
    }

    /** A fresh token for the merchant, or null when none could be had in time. */
    String issueToken(String merchant, Random random, long untilMs) throws InterruptedException {
        for (int tries = 0; tries < 20 && history.nowMs() < untilMs; tries++) {
            try {
                Response r = anyRoute(random).spec(merchant, PATIENCE).post("/tokens");
                if (r.statusCode() == 201) {
                    return r.jsonPath().getString("token");
                }
            } catch (Exception brokenConnection) {
                // tried again below
            }
            Thread.sleep(200 + random.nextInt(600));
        }
        return null;
    }

    /** Reads the order once, recording what it showed; an answer other than 200 records nothing. */
    void observeOrder(String merchant, String orderNo, Random random) {
        long sentAt = history.nowMs();
        try {
            Response r = anyRoute(random).spec(merchant, PATIENCE).get("/orders/" + orderNo);
            if (r.statusCode() == 200) {
                JsonPath json = r.jsonPath();
                history.sawOrder(new OrderSeen(merchant, orderNo, sentAt, history.nowMs(), json.getString("status"),
                        json.getInt("version"), json.getLong("refunded_amount"), "GET /orders"));
            }
        } catch (Exception brokenConnection) {
            // nothing seen
        }
    }
}
