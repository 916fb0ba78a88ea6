package io.payonce.chaos;

import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import io.payonce.chaos.Books.OrderRow;
import io.payonce.chaos.Books.PaymentRow;
import io.payonce.chaos.Books.RefundLedger;
import io.payonce.chaos.Checker.Violation;
import io.payonce.chaos.History.Attempt;
import io.payonce.chaos.History.FaultWindow;
import io.payonce.chaos.History.Heard;
import io.payonce.chaos.History.QueueCopy;
import io.payonce.chaos.History.Refund;
import io.payonce.chaos.History.Request;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.Ledger;

/**
 * The summary of a run (requests, queue commands and dead letters, payments, faults injected by kind, answers by
 * status, violations by name)
 * and, when something was violated, the seed and the whole history of the first violating request: every
 * copy and its answer, the order as clients saw it, the rows behind it, the channel's word, and the faults
 * around it.
 */
final class Report {

    private static final int VIOLATIONS_LISTED = 25;

    private Report() {
    }

    static String of(ChaosSettings settings, FaultSchedule schedule, History history, FaultInjector faults,
            Clients clients, Books books, List<Violation> violations, List<String> harness, List<String> notes,
            Map<String, Double> timings) {
        StringBuilder out = new StringBuilder();
        List<Request> requests = history.requests();
        int gateways = (settings.instances() + 1) / 2;
        out.append(String.format("PayOnce chaos run, seed %d: %d s of traffic, %d instances behind %d nginx gateway%s,"
                + " %d clients of %d merchants%n", settings.seed(), settings.traffic().toSeconds(), settings.instances(),
                gateways, gateways == 1 ? "" : "s", settings.clients(), settings.merchants()));
        out.append("  timings: ").append(timings.entrySet().stream()
                .map(e -> String.format("%s %.1f s", e.getKey(), e.getValue())).collect(Collectors.joining(", ")))
                .append('\n');

        Map<String, Integer> phases = new TreeMap<>();
        Map<String, Integer> answers = new TreeMap<>();
        Map<String, Integer> queueAnswers = new TreeMap<>();
        int copies = 0;
        int commands = 0;
        int queuedRequests = 0;
        for (Request request : requests) {
            for (Attempt attempt : request.attempts()) {
                copies++;
                phases.merge(attempt.phase(), 1, Integer::sum);
                if (!attempt.byQueue()) {
                    answers.merge(Answers.kind(attempt.answer(), attempt.hangUp()), 1, Integer::sum);
                }
            }
            List<QueueCopy> queued = request.queueCopies();
            commands += queued.size();
            queuedRequests += queued.isEmpty() ? 0 : 1;
            for (QueueCopy copy : queued) {
                if (copy.correlationId == null) {
                    queueAnswers.merge("not sent (" + notSent(copy.sendError) + ")", 1, Integer::sum);
                } else if (copy.answers().isEmpty()) {
                    queueAnswers.merge("none", 1, Integer::sum);
                }
                copy.answers().forEach(h -> queueAnswers.merge(Answers.kind(h.answer(), false), 1, Integer::sum));
            }
        }
        out.append(String.format("  requests: %d (%s); copies sent: %d (%s)%n", requests.size(), counts(clients.styles()),
                copies, counts(phases)));
        out.append(String.format("  queue commands: %d, for %d requests; their answers: %s; dead letters: %d%n", commands,
                queuedRequests, counts(queueAnswers), books.deadLetters.size()));
        Map<String, Integer> refundPhases = new TreeMap<>();
        Map<String, Integer> refundAnswers = new TreeMap<>();
        int refundCopies = 0;
        for (Refund refund : history.refunds()) {
            for (Attempt attempt : refund.attempts()) {
                refundCopies++;
                refundPhases.merge(attempt.phase(), 1, Integer::sum);
                refundAnswers.merge(Answers.kind(attempt.answer(), attempt.hangUp()), 1, Integer::sum);
            }
        }
        out.append(String.format("  refunds: %d of %d orders (%s); copies sent: %d (%s)%n", history.refunds().size(),
                history.refunds().stream().map(r -> Books.key(r.merchant, r.orderNo)).distinct().count(),
                counts(clients.refundStyles()), refundCopies, counts(refundPhases)));

        Map<String, Integer> orderStatus = new TreeMap<>();
        for (OrderRow order : books.orders.values()) {
            orderStatus.merge(order.status(), 1, Integer::sum);
        }
        Map<String, Integer> paymentStatus = new TreeMap<>();
        int paymentCount = 0;
        for (List<PaymentRow> rows : books.paymentsByRequest.values()) {
            for (PaymentRow row : rows) {
                paymentCount++;
                paymentStatus.merge(row.status() + (row.failure() == null ? "" : " " + row.failure()), 1, Integer::sum);
            }
        }
        long charges = books.ledgers.values().stream().mapToLong(Ledger::charges).sum();
        long calls = books.ledgers.values().stream().mapToLong(Ledger::attempts).sum();
        out.append(String.format("  orders: %d (%s); payments: %d (%s)%n", books.orders.size(), counts(orderStatus),
                paymentCount, counts(paymentStatus)));
        out.append(String.format("  channel: %d successful charges from %d charge calls%n", charges, calls));
        Map<String, Integer> refundStatus = new TreeMap<>();
        books.refundsByNumber.values().forEach(rows -> rows.forEach(row -> refundStatus.merge(row.status()
                + (row.failure() == null ? "" : " " + row.failure()), 1, Integer::sum)));
        long refundsMade = books.refundLedgers.values().stream().mapToLong(RefundLedger::refunds).sum();
        long refunded = books.refundLedgers.values().stream().mapToLong(RefundLedger::refundedAmount).sum();
        long refundCalls = books.refundLedgers.values().stream().mapToLong(RefundLedger::attempts).sum();
        out.append(String.format("  refund records: %d (%s); channel: %d successful refunds (%d cents in all) from %d"
                + " refund calls%n", refundStatus.values().stream().mapToInt(n -> n).sum(), counts(refundStatus), refundsMade,
                refunded, refundCalls));

        Map<String, Integer> injected = faults.injected();
        out.append(String.format("  faults injected: %d of %d drawn (%s)%n", injected.values().stream().mapToInt(n -> n).sum(),
                schedule.faults().size(), counts(injected)));
        if (!history.skipped().isEmpty()) {
            out.append("  faults skipped: ").append(counts(history.skipped())).append('\n');
        }
        out.append("  answers by HTTP: ").append(counts(answers)).append('\n');
        out.append("  refund answers: ").append(counts(refundAnswers)).append('\n');
        for (String note : notes) {
            out.append("  note: ").append(note).append('\n');
        }
        for (String problem : harness) {
            out.append("  harness problem: ").append(problem).append('\n');
        }
        if (violations.isEmpty()) {
            out.append("  violations: none\n");
            return out.toString();
        }
        Map<String, Integer> byName = new TreeMap<>();
        violations.forEach(v -> byName.merge(v.name(), 1, Integer::sum));
        out.append(String.format("  violations: %d (%s)%n", violations.size(), counts(byName)));
        violations.stream().limit(VIOLATIONS_LISTED).forEach(v -> out.append("    ").append(v).append('\n'));
        if (violations.size() > VIOLATIONS_LISTED) {
            out.append("    ... and ").append(violations.size() - VIOLATIONS_LISTED).append(" more\n");
        }
        Violation first = violations.get(0);
        out.append(String.format("%nseed %d; the first violation, %s, and its history:%n", settings.seed(), first.name()));
        history(out, first, history, books);
        return out.toString();
    }

    private static void history(StringBuilder out, Violation violation, History history, Books books) {
        String orderKey = violation.orderKey();
        List<Request> ofOrder = history.requests().stream()
                .filter(r -> Books.key(r.merchant, r.intent.orderNo()).equals(orderKey)).toList();
        long from = Long.MAX_VALUE;
        long to = 0;
        for (Request request : ofOrder) {
            String requestKey = Books.key(request.merchant, request.intent.requestNo());
            out.append(request == violation.request() ? "> " : "  ").append(request).append('\n');
            for (Attempt attempt : request.attempts().stream().sorted(Comparator.comparingLong(Attempt::sentAtMs)).toList()) {
                out.append("      ").append(attempt).append('\n');
                from = Math.min(from, attempt.sentAtMs());
                to = Math.max(to, attempt.doneAtMs());
                if (attempt.byQueue()) {
                    QueueCopy copy = attempt.queued();
                    out.append("          command ").append(copy.correlationId == null ? copy.sendError : copy.correlationId)
                            .append(copy.isReplyLost() ? " (its reply queue lost)" : "")
                            .append(books.deadLetters.stream().anyMatch(d -> copy.correlationId != null
                                    && copy.correlationId.equals(d.correlationId())) ? " (in payonce.dead)" : "")
                            .append('\n');
                    for (Heard heard : copy.answers()) {
                        out.append(String.format("          heard at %8.3f s: %s%s, final: %s%n", heard.atMs() / 1000.0,
                                Answers.describe(heard.answer()),
                                heard.queueAnswer().code() == null ? "" : " (code " + heard.queueAnswer().code() + ")",
                                heard.finalHeader()));
                        to = Math.max(to, heard.atMs());
                    }
                }
            }
            out.append("      the channel says: ").append(books.channelSays(requestKey)).append('\n');
            List<PaymentRow> rows = books.paymentsByRequest.getOrDefault(requestKey, List.of());
            out.append("      payment record: ").append(rows.isEmpty() ? "none" : rows).append('\n');
            out.append("      token: ").append(books.tokens.get(Books.key(request.merchant, request.intent.token())))
                    .append('\n');
        }
        for (Refund refund : history.refunds()) {
            if (!Books.key(refund.merchant, refund.orderNo).equals(orderKey)) {
                continue;
            }
            String refundKey = Books.key(refund.merchant, refund.refundNo);
            out.append(violation.request() == null && violation.detail().startsWith("refund #" + refund.id + " ")
                    ? "> " : "  ").append(refund).append('\n');
            for (Attempt attempt : refund.attempts().stream().sorted(Comparator.comparingLong(Attempt::sentAtMs)).toList()) {
                out.append("      ").append(attempt).append('\n');
                from = Math.min(from, attempt.sentAtMs());
                to = Math.max(to, attempt.doneAtMs());
            }
            out.append("      the channel says: ").append(books.channelSaysOfRefund(refundKey)).append('\n');
            out.append("      refund record: ").append(books.refundsByNumber.getOrDefault(refundKey, List.of()))
                    .append('\n');
            out.append("      token: ").append(books.tokens.get(Books.key(refund.merchant, refund.token))).append('\n');
        }
        out.append("  order: ").append(books.orders.get(orderKey)).append(", ledger: ")
                .append(books.ledgers.get(orderKey)).append(", ").append(books.refundLedgers.get(orderKey)).append('\n');
        history.orders().stream()
                .filter(o -> Books.key(o.merchant(), o.orderNo()).equals(orderKey))
                .sorted(Comparator.comparingLong(History.OrderSeen::receivedAtMs))
                .forEach(o -> out.append("      seen ").append(o).append('\n'));
        long windowFrom = from - 5_000;
        long windowTo = to + 5_000;
        out.append("  faults from 5 s before its first copy to 5 s after its last answer:\n");
        for (FaultWindow fault : history.faults()) {
            if (fault.overlaps(windowFrom, windowTo, 0)) {
                out.append("      ").append(fault).append('\n');
            }
        }
    }

    /** Why a command was not sent, in short: the exception's class, as "not sent: java.net.ConnectException: ..." names it. */
    private static String notSent(String sendError) {
        String exception = sendError == null ? "?" : sendError.replaceFirst("^not sent: ", "").replaceFirst(":.*", "");
        return exception.substring(exception.lastIndexOf('.') + 1);
    }

    private static String counts(Map<String, Integer> counts) {
        return counts.isEmpty() ? "none"
                : counts.entrySet().stream().map(e -> e.getKey() + " " + e.getValue()).collect(Collectors.joining(", "));
    }
}
