package io.payonce.chaos;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.payonce.chaos.History.Refund;
import io.payonce.chaos.History.Request;
import io.payonce.chaos.Traffic.Route;
import io.payonce.support.Answer;
import io.payonce.support.PayClient;
import io.payonce.support.PayRequest;

/**
 * The population of clients, as real ones behave. Each pays orders of its own, one after the other, with a
 * token and a request number of its own for each attempt; it sends a request once and waits, or
 * double-clicks (two or three identical copies at once, on different instances), or hangs up mid-request;
 * it retries on a timeout, a 5xx, a 409 request_in_progress or a 202 with the same key until it has a final
 * answer or loses patience; one that lost patience comes back much later with the same request, and may pay
 * the order again meanwhile with a new token and request number, as it may after a 402. A few come back
 * later even with a final answer. One request in five goes partly by queue: its first copy, and every other
 * copy at random, is a command on the pay queue (the same token and body), the rest go by HTTP. A client
 * refunds three paid orders in ten, once to three times, each refund a random part of the order (together they
 * may ask for more than was paid), one after the other or all at once, each with a key and refund number of
 * its own and sent in one of the same ways as a payment (by HTTP). An observer keeps reading orders that were
 * seen paid.
 */
final class Clients {

    /** How a client sends one request. */
    enum Style {
        PATIENT, DOUBLE_CLICK, HANGS_UP, COMES_BACK_LATER
    }

    private static final String TRAFFIC = "traffic";
    private static final String LATER = "later";
    private static final String FINAL = "final";
    private static final int COMEBACK_WORKERS = 3;
    /** Share of requests some of whose copies go as queue commands. */
    private static final int QUEUE_PERCENT = 20;
    /** Share of paid orders that are refunded, and of those refunded more than once whose refunds race. */
    private static final int REFUND_PERCENT = 30;
    private static final int RACE_PERCENT = 40;

    /** What a client sends as often as it takes for a final answer: a payment request or a refund. */
    private interface Sendable {
        /** Sends one copy, recorded in the history with its answer. */
        Answer send(int lane, Route route, Duration timeout, boolean hangUp, String phase);

        boolean isFinal(Answer answer);

        /** The first final answer any copy received, or null. */
        Answer finalAnswer();

        /** Whether this copy of the ones sent one after the other goes by queue. */
        boolean byQueue(Random random, int lane, int sent);

        /** Tells copies apart across instances. */
        int id();
    }

    /** A payment request: partly by queue when it was drawn so. */
    private record Payment(Traffic traffic, Request request) implements Sendable {

        @Override
        public Answer send(int lane, Route route, Duration timeout, boolean hangUp, String phase) {
            return traffic.pay(request, lane, route, timeout, hangUp, phase);
        }

        @Override
        public boolean isFinal(Answer answer) {
            return Answers.isFinal(answer);
        }

        @Override
        public Answer finalAnswer() {
            return request.finalAnswer();
        }

        @Override
        public boolean byQueue(Random random, int lane, int sent) {
            return request.byQueue && (lane + sent == 0 || random.nextBoolean());
        }

        @Override
        public int id() {
            return request.id;
        }
    }

    /** A refund: by HTTP only. */
    private record RefundCopies(Traffic traffic, Refund refund) implements Sendable {

        @Override
        public Answer send(int lane, Route route, Duration timeout, boolean hangUp, String phase) {
            return traffic.refund(refund, lane, route, timeout, hangUp, phase);
        }

        @Override
        public boolean isFinal(Answer answer) {
            return Answers.isRefundFinal(answer);
        }

        @Override
        public Answer finalAnswer() {
            return refund.finalAnswer();
        }

        @Override
        public boolean byQueue(Random random, int lane, int sent) {
            return false;
        }

        @Override
        public int id() {
            return 1_000_000 + refund.id;
        }
    }

    private final ChaosSettings settings;
    private final Traffic traffic;
    private final History history;
    private final String runTag;
    private final ExecutorService copies = Executors.newCachedThreadPool(daemons("chaos-copy"));
    private final List<Thread> customers = new ArrayList<>();
    private final List<Thread> comebackWorkers = new ArrayList<>();
    private final DelayQueue<Comeback> comebacks = new DelayQueue<>();
    private final List<String[]> paidOrders = new CopyOnWriteArrayList<>();
    private final Map<String, AtomicInteger> styles = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> refundStyles = new ConcurrentHashMap<>();
    private volatile boolean stopping;
    private volatile long trafficEndsMs = Long.MAX_VALUE;
    private Thread observer;

    Clients(ChaosSettings settings, Traffic traffic, History history) {
        this.settings = settings;
        this.traffic = traffic;
        this.history = history;
        this.runTag = Long.toString(Math.abs(settings.seed()), 36);
    }

    /** Starts every client, the workers that bring requests back later, and the observer. */
    void start(long trafficEndsMs) {
        this.trafficEndsMs = trafficEndsMs;
        List<String> merchants = settings.merchantIds();
        for (int i = 0; i < settings.clients(); i++) {
            Customer customer = new Customer(i, merchants.get(i % merchants.size()),
                    new Random(settings.seed() * 1_000_003L + i));
            customers.add(start("chaos-client-" + i, customer::run));
        }
        for (int i = 0; i < COMEBACK_WORKERS; i++) {
            comebackWorkers.add(start("chaos-later-" + i, this::comeBackLoop));
        }
        observer = start("chaos-observer", () -> observe(trafficEndsMs));
    }

    /** Waits for the clients to finish what they started (each drive is bounded); false if some did not in time. */
    boolean awaitClients(Duration bound) throws InterruptedException {
        long deadline = System.nanoTime() + bound.toNanos();
        for (Thread customer : customers) {
            customer.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        }
        observer.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        return customers.stream().noneMatch(Thread::isAlive);
    }

    /** No request comes back later any more; those still waiting to are left to the final round. */
    void stopComebacks() throws InterruptedException {
        stopping = true;
        for (Thread worker : comebackWorkers) {
            worker.join(TimeUnit.SECONDS.toMillis(40));
        }
        comebacks.clear();
    }

    /**
     * Every request once more with its own key, faults healed: one copy of each request that has a final answer
     * (which must be that answer again), and copies until a final answer, within {@code perRequest}, of each that
     * has none. Bounded by {@code bound} overall.
     */
    void finalRound(Duration perRequest, Duration bound) throws InterruptedException {
        ExecutorService round = Executors.newFixedThreadPool(6, daemons("chaos-final"));
        Random random = new Random(settings.seed() ^ 0x5DEECE66DL);
        List<Sendable> all = new ArrayList<>();
        history.requests().forEach(request -> all.add(new Payment(traffic, request)));
        history.refunds().forEach(refund -> all.add(new RefundCopies(traffic, refund)));
        try {
            for (Sendable sendable : all) {
                Random own = new Random(random.nextLong());
                round.submit(() -> {
                    if (sendable.finalAnswer() != null) {
                        sendable.send(0, firstRoute(sendable, own), Traffic.PATIENCE, false, FINAL);
                    } else {
                        untilFinal(sendable, 0, history.nowMs() + perRequest.toMillis(), own, FINAL);
                    }
                    return null;
                });
            }
            round.shutdown();
            round.awaitTermination(bound.toMillis(), TimeUnit.MILLISECONDS);
        } finally {
            round.shutdownNow();
        }
    }

    void close() {
        stopping = true;
        customers.forEach(Thread::interrupt);
        comebackWorkers.forEach(Thread::interrupt);
        if (observer != null) {
            observer.interrupt();
        }
        copies.shutdownNow();
    }

    /** How many requests each style sent. */
    Map<String, Integer> styles() {
        return counts(styles);
    }

    /** How many refunds each style sent. */
    Map<String, Integer> refundStyles() {
        return counts(refundStyles);
    }

    private static Map<String, Integer> counts(Map<String, AtomicInteger> byStyle) {
        Map<String, Integer> counts = new TreeMap<>();
        byStyle.forEach((style, n) -> counts.put(style, n.get()));
        return counts;
    }

    /** One client: pays its own orders one after the other until the traffic ends. */
    private final class Customer {
        private final int id;
        private final String merchant;
        private final Random random;
        private int orders;

        Customer(int id, String merchant, Random random) {
            this.id = id;
            this.merchant = merchant;
            this.random = random;
        }

        void run() {
            try {
                while (!stopping && history.nowMs() < trafficEndsMs) {
                    Thread.sleep(100 + random.nextInt(700));
                    payAnOrder();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        private void payAnOrder() throws InterruptedException {
            String orderNo = "o" + runTag + "_c" + id + "_" + (++orders);
            if (!traffic.createOrder(merchant, orderNo, random, trafficEndsMs)) {
                return;
            }
            for (int attempt = 1; attempt <= 3 && !stopping && history.nowMs() < trafficEndsMs; attempt++) {
                String token = traffic.issueToken(merchant, random, trafficEndsMs);
                if (token == null) {
                    return;
                }
                Request request = history.newRequest(merchant, id,
                        new PayRequest(orderNo, orderNo + "_r" + attempt, token, PayClient.AMOUNT),
                        random.nextInt(100) < QUEUE_PERCENT);
                Sendable payment = new Payment(traffic, request);
                Answer answer = send(payment, styles);
                traffic.observeOrder(merchant, orderNo, random);
                if (answer == null) {
                    comeBackLater(payment, 10_000 + random.nextInt(40_000));
                    // an impatient client pays the order again meanwhile, with a new token and request number
                    if (random.nextInt(3) == 0) {
                        continue;
                    }
                    return;
                }
                if (random.nextInt(10) == 0) {
                    comeBackLater(payment, 5_000 + random.nextInt(30_000));
                }
                if (Answers.isPaid(answer)) {
                    paidOrders.add(new String[] { merchant, orderNo });
                    if (random.nextInt(100) < REFUND_PERCENT) {
                        refund(orderNo);
                    }
                    return;
                }
                boolean failed = Answers.isDeclined(answer) || Answers.isNotCompleted(answer);
                if (!failed || random.nextInt(4) == 0) {
                    return;
                }
            }
        }

        /**
         * Refunds part of the paid order once to three times, each a random part of what was paid, or what is
         * left of it as the client reckons, or more; sent one after the other, or all at once.
         */
        private void refund(String orderNo) throws InterruptedException {
            int count = 1 + random.nextInt(3);
            List<Sendable> refunds = new ArrayList<>();
            long asked = 0;
            for (int i = 1; i <= count; i++) {
                String token = traffic.issueToken(merchant, random, trafficEndsMs);
                if (token == null) {
                    break;
                }
                long amount = random.nextInt(5) == 0 ? Math.max(1, PayClient.AMOUNT - asked)
                        : 1 + random.nextInt((int) (PayClient.AMOUNT * 3 / 4));
                asked += amount;
                refunds.add(new RefundCopies(traffic, history.newRefund(merchant, id, orderNo, orderNo + "_f" + i, token,
                        amount)));
            }
            if (refunds.size() > 1 && random.nextInt(100) < RACE_PERCENT) {
                List<Future<Answer>> racing = new ArrayList<>();
                for (Sendable refund : refunds) {
                    Random own = new Random(random.nextLong());
                    racing.add(copies.submit(() -> sendOrComeBack(refund, own)));
                }
                for (Future<Answer> refund : racing) {
                    try {
                        refund.get(trafficEndsMs - history.nowMs() + 3 * Traffic.PATIENCE.toMillis() + 60_000,
                                TimeUnit.MILLISECONDS);
                    } catch (Exception lost) {
                        // its answers are in the history
                    }
                }
            } else {
                for (Sendable refund : refunds) {
                    sendOrComeBack(refund, random);
                }
            }
            traffic.observeOrder(merchant, orderNo, random);
        }

        private Answer sendOrComeBack(Sendable refund, Random own) throws InterruptedException {
            Answer answer = send(refund, refundStyles, own);
            if (answer == null || own.nextInt(10) == 0) {
                comeBackLater(refund, 5_000 + own.nextInt(30_000));
            }
            return answer;
        }

        private Answer send(Sendable sendable, Map<String, AtomicInteger> counted) throws InterruptedException {
            return send(sendable, counted, random);
        }

        /** Sends the request in this client's way; answers its final answer, or null when the client lost patience. */
        private Answer send(Sendable request, Map<String, AtomicInteger> counted, Random random)
                throws InterruptedException {
            Style style = Style.values()[weighted(random, 40, 25, 20, 15)];
            counted.computeIfAbsent(style.name().toLowerCase().replace('_', ' '), k -> new AtomicInteger()).incrementAndGet();
            long deadline = patience(8_000 + random.nextInt(17_000));
            switch (style) {
                case DOUBLE_CLICK -> {
                    int clicks = 2 + random.nextInt(2);
                    List<Future<Answer>> sent = new ArrayList<>();
                    for (int lane = 0; lane < clicks; lane++) {
                        int own = lane;
                        Random laneRandom = new Random(random.nextLong());
                        sent.add(copies.submit(() -> untilFinal(request, own, deadline, laneRandom, TRAFFIC)));
                    }
                    Answer first = null;
                    for (Future<Answer> copy : sent) {
                        try {
                            Answer answer = copy.get(deadline - history.nowMs() + Traffic.PATIENCE.toMillis() + 5_000,
                                    TimeUnit.MILLISECONDS);
                            first = first != null ? first : answer;
                        } catch (Exception lost) {
                            // that copy's answer is in the history, or it never had one
                        }
                    }
                    return first;
                }
                case HANGS_UP -> {
                    Answer answer = request.send(0, firstRoute(request, random),
                            Duration.ofMillis(30 + random.nextInt(1_500)), true, TRAFFIC);
                    if (request.isFinal(answer)) {
                        return answer;
                    }
                    return random.nextBoolean() ? untilFinal(request, 0, deadline, random, TRAFFIC) : null;
                }
                case COMES_BACK_LATER -> {
                    Answer answer = request.send(0, firstRoute(request, random), Traffic.PATIENCE, false, TRAFFIC);
                    return request.isFinal(answer) ? answer : null;
                }
                default -> {
                    return untilFinal(request, 0, deadline, random, TRAFFIC);
                }
            }
        }
    }

    /**
     * Sends copies of the request one after the other, each on a route of its own, until one is answered
     * finally (answered) or {@code deadlineMs} has passed (null). Waits between copies as the answer says:
     * its Retry-After, a moment for a 202, less for a broken connection.
     */
    private Answer untilFinal(Sendable request, int lane, long deadlineMs, Random random, String phase)
            throws InterruptedException {
        for (int sent = 0; sent < 200; sent++) {
            // side by side, lanes take different instances; one after the other, a lane moves on to the next
            Route route = request.byQueue(random, lane, sent) ? Traffic.QUEUE
                    : traffic.route(random, request.id() + lane + sent);
            Answer answer = request.send(lane, route, Traffic.PATIENCE, false, phase);
            if (request.isFinal(answer)) {
                return answer;
            }
            if (history.nowMs() >= deadlineMs) {
                return null;
            }
            Thread.sleep(pause(answer, random));
        }
        return null;
    }

    /** The queue for a request that goes partly by queue, else anywhere. */
    private Route firstRoute(Sendable request, Random random) {
        return request.byQueue(random, 0, 0) ? Traffic.QUEUE : traffic.anyRoute(random);
    }

    /**
     * When a client sending now gives up: after {@code ms}, or soon after the traffic ends, whichever comes
     * first; what it leaves without a final answer the final round sends again.
     */
    private long patience(long ms) {
        return Math.min(history.nowMs() + ms, trafficEndsMs + 2_000);
    }

    private static long pause(Answer answer, Random random) {
        if (answer.retryAfter() != null) {
            try {
                return Math.min(2, Long.parseLong(answer.retryAfter().trim())) * 1_000 + random.nextInt(300);
            } catch (NumberFormatException notSeconds) {
                // an HTTP date: wait as for anything else
            }
        }
        return answer.status() == 202 ? 500 + random.nextInt(1_000) : 200 + random.nextInt(600);
    }

    private void comeBackLater(Sendable request, long inMs) {
        if (!stopping) {
            comebacks.add(new Comeback(request, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(inMs)));
        }
    }

    private void comeBackLoop() {
        Random random = new Random(settings.seed() + Thread.currentThread().getName().hashCode());
        try {
            while (!stopping) {
                Comeback due = comebacks.poll(200, TimeUnit.MILLISECONDS);
                if (due == null || stopping) {
                    continue;
                }
                Answer answer = untilFinal(due.request, 0, patience(5_000 + random.nextInt(15_000)), random, LATER);
                if (answer == null) {
                    comeBackLater(due.request, 15_000 + random.nextInt(30_000));
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Reads, every quarter second, an order that was seen paid: it must never be seen otherwise again. */
    private void observe(long trafficEndsMs) {
        Random random = new Random(settings.seed() + 7);
        try {
            while (!stopping && history.nowMs() < trafficEndsMs) {
                Thread.sleep(250);
                if (!paidOrders.isEmpty()) {
                    String[] order = paidOrders.get(random.nextInt(paidOrders.size()));
                    traffic.observeOrder(order[0], order[1], random);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private record Comeback(Sendable request, long dueNanos) implements Delayed {

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(dueNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed other) {
            return Long.compare(getDelay(TimeUnit.NANOSECONDS), other.getDelay(TimeUnit.NANOSECONDS));
        }
    }

    private static int weighted(Random random, int... weights) {
        int total = 0;
        for (int w : weights) {
            total += w;
        }
        int n = random.nextInt(total);
        for (int i = 0; i < weights.length; i++) {
            n -= weights[i];
            if (n < 0) {
                return i;
            }
        }
        return weights.length - 1;
    }

    private static Thread start(String name, Runnable body) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    private static java.util.concurrent.ThreadFactory daemons(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return body -> {
            Thread thread = new Thread(body, prefix + "-" + n.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }
}
