package io.payonce.chaos;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import io.payonce.chaos.FaultSchedule.Fault;
import io.payonce.chaos.FaultSchedule.Kind;
import io.payonce.support.Answer;
import io.payonce.support.PayClient;
import io.payonce.support.PayRequest;

/**
 * Everything the clients saw and the faults that happened, on one clock (milliseconds since the run began):
 * each request with every copy sent of it and its answer, each order as {@code GET /orders} showed it, and
 * each fault's window. Written by many threads; read by the checker once they have stopped.
 */
final class History {

    /** A request as a client means it: one order, its own request number and token, sent as often as it takes. */
    static final class Request {
        final int id;
        final String merchant;
        final int client;
        final PayRequest intent;
        private final List<Attempt> attempts = new ArrayList<>();

        Request(int id, String merchant, int client, PayRequest intent) {
            this.id = id;
            this.merchant = merchant;
            this.client = client;
            this.intent = intent;
        }

        synchronized void add(Attempt attempt) {
            attempts.add(attempt);
        }

        synchronized List<Attempt> attempts() {
            return List.copyOf(attempts);
        }

        /** The first final answer any copy received, or null. */
        synchronized Answer finalAnswer() {
            return attempts.stream().map(Attempt::answer).filter(Answers::isFinal).findFirst().orElse(null);
        }

        long firstSentMs() {
            List<Attempt> all = attempts();
            return all.isEmpty() ? Long.MAX_VALUE : all.get(0).sentAtMs();
        }

        @Override
        public String toString() {
            return "request #" + id + " of client " + client + " (" + merchant + "): order " + intent.orderNo()
                    + ", request_no " + intent.requestNo() + ", token " + intent.token();
        }
    }

    /**
     * One copy of a request: which of the client's side-by-side copies sent it ({@code lane}: 0, or 0 to 2 for a
     * double click), the way it took ({@code route}: a gateway, or {@code instance} directly, -1 through a
     * gateway), when it was sent, in which phase of the run, whether the client meant to hang up early, what
     * came back, and when on the machine's wall clock (the one MySQL's timestamps are read on).
     */
    record Attempt(int lane, String route, int instance, long sentAtMs, String phase, boolean hangUp, Answer answer,
            long doneAtEpochMs) {

        boolean direct() {
            return instance >= 0;
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

    /** An order as one {@code GET /orders/{order_no}} (or a 200 PAID answer) showed it, with when it was asked and told. */
    record OrderSeen(String merchant, String orderNo, long sentAtMs, long receivedAtMs, String status, int version,
            String how) {

        @Override
        public String toString() {
            return String.format("%8.3f s  %s%s (%s, asked at %.3f s)", receivedAtMs / 1000.0, status,
                    version < 0 ? "" : " v" + version, how, sentAtMs / 1000.0);
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
    private final List<OrderSeen> orders = new ArrayList<>();
    private final List<FaultWindow> faults = new ArrayList<>();
    private final Map<String, Integer> skipped = new TreeMap<>();

    long nowMs() {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    synchronized Request newRequest(String merchant, int client, PayRequest intent) {
        Request request = new Request(requests.size() + 1, merchant, client, intent);
        requests.add(request);
        return request;
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
