package io.payonce.chaos;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import io.payonce.chaos.FaultSchedule.Fault;
import io.payonce.chaos.FaultSchedule.Kind;
import io.payonce.support.Answer;
import io.payonce.support.PayClient;
import io.payonce.support.PayRequest;
import io.payonce.support.QueueAnswer;
import io.payonce.support.QueueClient;

/**
 * Everything the clients saw and the faults that happened, on one clock (milliseconds since the run began):
 * each request with every copy sent of it and its answer (a copy sent as a queue command with every answer
 * its reply queue received), each order as {@code GET /orders} showed it, and each fault's window. Written by
 * many threads; read by the checker once they have stopped.
 */
final class History {

    /**
     * A request as a client means it: one order, its own request number and token, sent as often as it takes;
     * {@code byQueue}: some of its copies go as queue commands.
     */
    static final class Request {
        final int id;
        final String merchant;
        final int client;
        final PayRequest intent;
        final boolean byQueue;
        private final List<Attempt> attempts = new ArrayList<>();
        private final List<QueueCopy> queued = new ArrayList<>();

        Request(int id, String merchant, int client, PayRequest intent, boolean byQueue) {
            this.id = id;
            this.merchant = merchant;
            this.client = client;
            this.intent = intent;
            this.byQueue = byQueue;
        }

        synchronized void add(Attempt attempt) {
            attempts.add(attempt);
        }

        synchronized void add(QueueCopy copy) {
            queued.add(copy);
        }

        /**
         * Every copy with its answer, in the order they were answered: an HTTP copy as it came back, a queue
         * command as {@link QueueCopy#attempt()} reads its answers so far.
         */
        synchronized List<Attempt> attempts() {
            if (queued.isEmpty()) {
                return List.copyOf(attempts);
            }
            List<Attempt> all = new ArrayList<>(attempts);
            queued.forEach(copy -> all.add(copy.attempt()));
            all.sort(Comparator.comparingLong(Attempt::doneAtMs));
            return List.copyOf(all);
        }

        /** The copies sent as queue commands. */
        synchronized List<QueueCopy> queueCopies() {
            return List.copyOf(queued);
        }

        /** The first final answer any copy received, or null. */
        Answer finalAnswer() {
            return attempts().stream().map(Attempt::answer).filter(Answers::isFinal).findFirst().orElse(null);
        }

        long firstSentMs() {
            List<Attempt> all = attempts();
            return all.isEmpty() ? Long.MAX_VALUE : all.get(0).sentAtMs();
        }

        @Override
        public String toString() {
            return "request #" + id + " of client " + client + " (" + merchant + "): order " + intent.orderNo()
                    + ", request_no " + intent.requestNo() + ", token " + intent.token()
                    + (byQueue ? ", partly by queue" : "");
        }
    }

    /**
     * A refund as a client means it: part (or all, or more than is left) of one paid order, its own refund number
     * and token, sent as often as it takes, by HTTP only.
     */
    static final class Refund {
        final int id;
        final String merchant;
        final int client;
        final String orderNo;
        final String refundNo;
        final String token;
        final long amount;
        private final List<Attempt> attempts = new ArrayList<>();

        Refund(int id, String merchant, int client, String orderNo, String refundNo, String token, long amount) {
            this.id = id;
            this.merchant = merchant;
            this.client = client;
            this.orderNo = orderNo;
            this.refundNo = refundNo;
            this.token = token;
            this.amount = amount;
        }

        synchronized void add(Attempt attempt) {
            attempts.add(attempt);
        }

        /** Every copy with its answer, in the order they were answered. */
        synchronized List<Attempt> attempts() {
            List<Attempt> all = new ArrayList<>(attempts);
            all.sort(Comparator.comparingLong(Attempt::doneAtMs));
            return List.copyOf(all);
        }

        /** The first final answer any copy received, or null. */
        Answer finalAnswer() {
            return attempts().stream().map(Attempt::answer).filter(Answers::isRefundFinal).findFirst().orElse(null);
        }

        long firstSentMs() {
            return attempts().stream().mapToLong(Attempt::sentAtMs).min().orElse(Long.MAX_VALUE);
        }

        Map<String, Object> body() {
            return Map.of("order_no", orderNo, "refund_no", refundNo, "amount", amount);
        }

        @Override
        public String toString() {
            return "refund #" + id + " of client " + client + " (" + merchant + "): order " + orderNo + ", refund_no "
                    + refundNo + ", token " + token + ", amount " + amount;
        }
    }

    /**
     * One copy of a request: which of the client's side-by-side copies sent it ({@code lane}: 0, or 0 to 2 for a
     * double click), the way it took ({@code route}: a gateway, or {@code instance} directly, -1 through a
     * gateway or the queue), when it was sent, in which phase of the run, whether the client meant to hang up
     * early, what came back, and when on the machine's wall clock (the one MySQL's timestamps are read on);
     * {@code queued}: the queue command it stands for, null for an HTTP copy.
     */
    record Attempt(int lane, String route, int instance, long sentAtMs, String phase, boolean hangUp, Answer answer,
            long doneAtEpochMs, QueueCopy queued) {

        /** An HTTP copy. */
        Attempt(int lane, String route, int instance, long sentAtMs, String phase, boolean hangUp, Answer answer,
                long doneAtEpochMs) {
            this(lane, route, instance, sentAtMs, phase, hangUp, answer, doneAtEpochMs, null);
        }

        boolean direct() {
            return instance >= 0;
        }

        boolean byQueue() {
            return queued != null;
        }

        long doneAtMs() {
            return sentAtMs + answer.elapsedMs();
        }

        @Override
        public String toString() {
            return String.format("%8.3f s  %-8s lane %d %-8s %s%s", sentAtMs / 1000.0, phase, lane, route,
                    hangUp ? "(hangs up) " : "", Answers.describe(answer));
        }
    }

    /**
     * One copy of a request sent as a queue command, and every answer its reply queue received for its
     * correlation id, each with when it arrived there (its reader's clock, on the run's; when the reader did not
     * say, when the harness looked). {@code replyQueue} and {@code correlationId} are null when the broker never
     * confirmed the publish: then nothing is owed to it. {@code replyLost}: the client's reply queue was gone,
     * so answers sent after that could not come.
     */
    static final class QueueCopy {
        /** The route name of every queue command. */
        static final String ROUTE = "queue";

        final int lane;
        final long sentAtMs;
        final long sentAtEpochMs;
        final String phase;
        final boolean hangUp;
        final String replyQueue;
        final String correlationId;
        final String sendError;
        private final List<Heard> heard = new ArrayList<>();
        private volatile boolean replyLost;

        QueueCopy(int lane, long sentAtMs, long sentAtEpochMs, String phase, boolean hangUp, String replyQueue,
                String correlationId, String sendError) {
            this.lane = lane;
            this.replyQueue = replyQueue;
            this.sentAtMs = sentAtMs;
            this.sentAtEpochMs = sentAtEpochMs;
            this.phase = phase;
            this.hangUp = hangUp;
            this.correlationId = correlationId;
            this.sendError = sendError;
        }

        /**
         * Takes the answers of {@code all} (every answer to the correlation id, in order) not heard yet, looked at
         * {@code atMs}.
         */
        synchronized void heard(List<QueueAnswer> all, long atMs) {
            for (int i = heard.size(); i < all.size(); i++) {
                QueueAnswer answer = all.get(i);
                long arrivedMs = answer.receivedAtEpochMs() > 0
                        ? Math.max(sentAtMs, sentAtMs + answer.receivedAtEpochMs() - sentAtEpochMs) : atMs;
                heard.add(Heard.of(answer, arrivedMs - sentAtMs, arrivedMs));
            }
        }

        synchronized List<Heard> answers() {
            return List.copyOf(heard);
        }

        void replyLost() {
            replyLost = true;
        }

        boolean isReplyLost() {
            return replyLost;
        }

        /**
         * The copy as the checker's rules for every copy read it: its first final answer; else its first other
         * than a 202 (a 503 of a command dead-lettered as it never executed, or a retryable answer whose final one
         * has not come); else the latest heard (a 202); else none.
         */
        synchronized Attempt attempt() {
            Heard chosen = heard.stream().filter(h -> Answers.isFinal(h.answer())).findFirst()
                    .or(() -> heard.stream().filter(h -> h.answer().status() != 202).findFirst())
                    .orElse(heard.isEmpty() ? null : heard.get(heard.size() - 1));
            if (chosen != null) {
                return attemptOf(chosen);
            }
            return new Attempt(lane, ROUTE, -1, sentAtMs, phase, hangUp, new Answer(0, null, null, null, null,
                    sendError != null ? sendError : "no answer on the reply queue", 0), sentAtEpochMs, this);
        }

        /** Every answer heard, each as the copy's attempt would be had it been the one answer. */
        synchronized List<Attempt> heardAttempts() {
            return heard.stream().map(this::attemptOf).toList();
        }

        private Attempt attemptOf(Heard one) {
            return new Attempt(lane, ROUTE, -1, sentAtMs, phase, hangUp, one.answer(),
                    sentAtEpochMs + (one.atMs() - sentAtMs), this);
        }
    }

    /**
     * A queue answer as it arrived, {@code atMs}, and as an HTTP client would have had it: its status, body and
     * replay flag, elapsed from the send until it arrived.
     */
    record Heard(QueueAnswer queueAnswer, Answer answer, long atMs) {

        /** What its {@code final} header says: true, false, or null when it has none. */
        Boolean finalHeader() {
            return queueAnswer.finalHeader();
        }


        static Heard of(QueueAnswer queueAnswer, long elapsedMs, long atMs) {
            return new Heard(queueAnswer, new Answer(queueAnswer.status(), QueueClient.JSON, queueAnswer.body(),
                    queueAnswer.replayed() ? "true" : null, null, null, elapsedMs), atMs);
        }
    }

    /**
     * An order as one {@code GET /orders/{order_no}} (or a 200 PAID answer) showed it, with when it was asked and
     * told; {@code refundedAmount} -1 when the answer did not say.
     */
    record OrderSeen(String merchant, String orderNo, long sentAtMs, long receivedAtMs, String status, int version,
            long refundedAmount, String how) {

        @Override
        public String toString() {
            return String.format("%8.3f s  %s%s%s (%s, asked at %.3f s)", receivedAtMs / 1000.0, status,
                    version < 0 ? "" : " v" + version, refundedAmount <= 0 ? "" : ", refunded " + refundedAmount, how,
                    sentAtMs / 1000.0);
        }
    }

    /** A fault's time span; {@code endMs} is set when it is healed (an instance: once it is ready again). */
    static final class FaultWindow {
        final Fault fault;
        final long startMs;
        private volatile long endMs = Long.MAX_VALUE;
        private volatile String note = "";

        FaultWindow(Fault fault, long startMs) {
            this.fault = fault;
            this.startMs = startMs;
        }

        Kind kind() {
            return fault.kind();
        }

        void end(long atMs) {
            endMs = Math.min(endMs, atMs);
        }

        long endMs() {
            return endMs;
        }

        void note(String text) {
            note = text;
        }

        boolean overlaps(long fromMs, long toMs, long marginMs) {
            return startMs <= toMs && fromMs <= (endMs == Long.MAX_VALUE ? Long.MAX_VALUE : endMs + marginMs);
        }

        @Override
        public String toString() {
            return String.format("%8.3f s to %s  %s%s", startMs / 1000.0,
                    endMs == Long.MAX_VALUE ? "the end" : String.format("%.3f s", endMs / 1000.0),
                    fault.describe().trim().replaceFirst("^[0-9.]+ s\\s+", ""), note.isEmpty() ? "" : " (" + note + ")");
        }
    }

    private final long startNanos = System.nanoTime();
    private final List<Request> requests = new ArrayList<>();
    private final List<Refund> refunds = new ArrayList<>();
    private final List<OrderSeen> orders = new ArrayList<>();
    private final List<FaultWindow> faults = new ArrayList<>();
    private final Map<String, Integer> skipped = new TreeMap<>();

    long nowMs() {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    synchronized Request newRequest(String merchant, int client, PayRequest intent, boolean byQueue) {
        Request request = new Request(requests.size() + 1, merchant, client, intent, byQueue);
        requests.add(request);
        return request;
    }

    synchronized Refund newRefund(String merchant, int client, String orderNo, String refundNo, String token,
            long amount) {
        Refund refund = new Refund(refunds.size() + 1, merchant, client, orderNo, refundNo, token, amount);
        refunds.add(refund);
        return refund;
    }

    synchronized List<Refund> refunds() {
        return List.copyOf(refunds);
    }

    synchronized void sawOrder(OrderSeen seen) {
        orders.add(seen);
    }

    FaultWindow faultStarted(Fault fault) {
        return faultStarted(fault, nowMs());
    }

    synchronized FaultWindow faultStarted(Fault fault, long atMs) {
        FaultWindow window = new FaultWindow(fault, atMs);
        faults.add(window);
        return window;
    }

    synchronized void faultSkipped(Fault fault, String why) {
        skipped.merge(fault.kind().label + " (" + why + ")", 1, Integer::sum);
    }

    synchronized List<Request> requests() {
        return List.copyOf(requests);
    }

    synchronized List<OrderSeen> orders() {
        return List.copyOf(orders);
    }

    synchronized List<FaultWindow> faults() {
        return List.copyOf(faults);
    }

    synchronized Map<String, Integer> skipped() {
        return Collections.unmodifiableMap(new TreeMap<>(skipped));
    }
}
