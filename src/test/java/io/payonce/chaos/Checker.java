package io.payonce.chaos;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

import io.payonce.chaos.Books.OrderRow;
import io.payonce.chaos.Books.PaymentRow;
import io.payonce.chaos.Books.RefundLedger;
import io.payonce.chaos.Books.RefundRow;
import io.payonce.chaos.Books.TokenRow;
import io.payonce.chaos.FaultSchedule.Kind;
import io.payonce.chaos.History.Attempt;
import io.payonce.chaos.History.FaultWindow;
import io.payonce.chaos.History.Heard;
import io.payonce.chaos.History.OrderSeen;
import io.payonce.chaos.History.QueueCopy;
import io.payonce.chaos.History.Refund;
import io.payonce.chaos.History.Request;
import io.payonce.support.Answer;
import io.payonce.support.PayClient;
import io.payonce.support.PayClient.ChannelCharge;
import io.payonce.support.PayClient.Ledger;
import io.payonce.support.QueueAnswer;

/**
 * Reads every answer every client received, the service's tables and the channel's books, and names each
 * breach of contract section 7 (and of section 9 for queue commands) it finds. Each name is one sentence of
 * the contract made checkable. A queue command is a copy like an HTTP one to every rule, its answer its first
 * final answer (else the entrance giving it up, else its 202, else none: {@link History.QueueCopy#attempt()});
 * its other answers are held to that one by {@value #QUEUE_DIFFERENT}, so that the rules hold for every
 * answer it got.
 *
 * <ul>
 * <li>{@value #SECOND_CHARGE}: the channel's ledger holds more than one successful charge for an order;
 * <li>{@value #LEDGER_VS_ORDER}: an order PAID without exactly one charge (or without one SUCCEEDED payment),
 * or charged and not PAID;
 * <li>{@value #LEDGER_VS_ANSWER}: a final 200 PAID whose request the channel did not charge (or under another
 * transaction), or a 402 payment_not_completed whose number the channel has not closed;
 * <li>{@value #PAYMENT_VS_CHANNEL}: a payment SUCCEEDED the channel did not charge, FAILED as declined the
 * channel did not decline, or FAILED as closed the channel did not close;
 * <li>{@value #SECOND_PAYMENT}: two payment records for one merchant request number;
 * <li>{@value #DIFFERENT_ANSWERS}: two copies of one request, or a copy and the token's stored answer, with
 * different final statuses or bodies;
 * <li>{@value #MOVED_BACK}: an order seen PAID (by GET /orders or a 200 PAID) and later seen otherwise, or not
 * PAID in the end;
 * <li>{@value #PHANTOM_DECLINE}: a final 402 payment_declined for a request number the channel did not decline;
 * <li>{@value #NEVER_ANSWERED}: a request with no final answer after the faults were healed, reconciliation had
 * its time and the final round retried it with its own key;
 * <li>{@value #LEFT_IN_FLIGHT}: a payment still PROCESSING, or an order still PAYING, once the run has settled;
 * <li>{@value #AFTER_503}: a request answered 503 temporarily_unavailable by the service, by any entrance (a queue
 * command's answers each count, a 503 before its final answer included), every copy of it sent until then
 * answered so too, whose payment record was opened before that answer: the 503 said nothing was charged and
 * nothing could be under that request, yet the opening stands, and reconciliation charges it (or closes it).
 * Only a retry sent after the 503 may open the request again. A 409 request_in_progress is no such promise: it
 * says another copy runs;
 * <li>{@value #SLOW_WAIT}: a copy sent straight to an instance, outside any MySQL fault (and the 2 s after),
 * answered later than its bound plus the slack (one second): a duplicate's wait (409 request_in_progress or a
 * replayed answer) by the wait bound, a first execution by the channel timeout plus a few seconds; or not
 * answered at all within the client's patience. A copy to an instance that was paused while it ran (or up to
 * 2 s before) has its bound lengthened by the pause, and may go unanswered within the client's patience;
 * <li>{@value #REFUSED}: a valid request of the client's own order refused with a 4xx the contract gives it no
 * reason for (400, 404, 422 ...);
 * <li>{@value #QUEUE_UNANSWERED}: a queue command (its publish confirmed, its reply queue kept) whose reply queue
 * received no answer marked {@code final: true} once the run has settled and every answer owed on the queue has
 * been sent, while its request is settled: its payment record SUCCEEDED or FAILED, its token holding a final
 * answer, or a copy given one. Excused: a command found in {@code payonce.dead}, answered 503 (not final) as it
 * never executed, which tells the client to send it again, as a 503 does over HTTP (whether it executed is
 * {@value #DEAD_EXECUTED}'s question). The entrance never dead-letters a command with a 409 request_in_progress,
 * nor gives one up for its deliveries alone: such a 409, like a 503 before a final answer, only comes first. A
 * command whose request never got a final answer at all is not named here: {@value #NEVER_ANSWERED} names its
 * request;
 * <li>{@value #QUEUE_DIFFERENT}: a queue command whose final answers (marked {@code final: true}; an answer may
 * come twice, and a 202 is followed by the settled answer) differ in status, {@code code} header or body. Its
 * first final answer is its copy's to every other rule, so it is held to the other copies' and to the token's
 * stored answer by {@value #DIFFERENT_ANSWERS};
 * <li>{@value #QUEUE_FINAL_HEADER}: a queue answer without the {@code final} header, or whose header says other
 * than its status (true on a 202, a 503, a 409 request_in_progress; false on a 200, a 402 or a final refusal); a
 * 409 request_no_conflict may be either (final once the number's holder has settled);
 * <li>{@value #DEAD_EXECUTED}: a command in {@code payonce.dead} whose key had executed when it was dead-lettered:
 * a payment or refund record of its token opened, or its token claimed or settled and not released since,
 * before the entrance looked ({@code x-death}'s time, whole seconds, less the answer's confirm timeout of 5 s,
 * which the entrance waits out between its look and the dead-lettering). A record opened later belongs to a
 * copy sent again, as a dead letter's answer tells its producer to;
 * </ul>
 *
 * <p>Refunds (contract section 10), each a refund the clients sent with its own key and refund number:
 * <ul>
 * <li>{@value #REFUND_OVER_CHARGE}: the channel's ledger shows more refunded for an order than it charged for it
 * (its charges times the order's amount);
 * <li>{@value #REFUND_LEDGER_VS_ORDER}: the ledger's refunded amount is not the order's {@code refunded_amount},
 * or its count of successful refunds not the order's SUCCEEDED refund records;
 * <li>{@value #REFUND_DIFFERENT}: two copies of one refund, or a copy and the token's stored answer, with
 * different final statuses or bodies;
 * <li>{@value #REFUND_VS_ANSWER}: a final 200 REFUNDED whose refund record is not SUCCEEDED with the answer's
 * {@code channel_refund_id}, a 402 refund_declined whose record is not FAILED as declined, a 402
 * refund_not_completed whose record is not FAILED as closed, or a refund refused with a final 422 or 409 that
 * has a record;
 * <li>{@value #REFUND_VS_CHANNEL}: a refund record SUCCEEDED the channel did not refund (or under another refund
 * id), FAILED as declined the channel did not decline, or FAILED as closed the channel did not close;
 * <li>{@value #REFUND_STATUS}: an order REFUNDED whose {@code refunded_amount} is not its amount,
 * PARTIALLY_REFUNDED whose refunded amount is not between nothing and its amount, PAID with something refunded,
 * or unpaid with something refunded;
 * <li>{@value #REFUND_NEVER_ANSWERED}: a refund with no final answer once the run has settled and the final
 * round sent it again;
 * <li>{@value #REFUND_REFUSED}: a refund refused with a 4xx the contract gives it no reason for: 422
 * refund_exceeds_payment although every refund the clients asked of the order fits in it together, 409
 * order_not_refundable of an order never refunded in full (every refunded order was paid first), or any
 * other refusal (400, 404, refund_no_conflict, idempotency_key_reused ...);
 * <li>{@value #LEFT_IN_FLIGHT} also names a refund record still PROCESSING, and an order with an amount still
 * reserved, once the run has settled; {@value #MOVED_BACK} also an order seen further refunded (or with more
 * refunded) and later seen less so.
 * </ul>
 */
final class Checker {

    static final String SECOND_CHARGE = "second charge";
    static final String LEDGER_VS_ORDER = "ledger disagrees with an order";
    static final String LEDGER_VS_ANSWER = "ledger disagrees with an answer";
    static final String PAYMENT_VS_CHANNEL = "payment disagrees with the channel";
    static final String SECOND_PAYMENT = "second payment record";
    static final String DIFFERENT_ANSWERS = "different final answers";
    static final String MOVED_BACK = "order moved back from PAID";
    static final String PHANTOM_DECLINE = "402 payment_declined the channel never gave";
    static final String NEVER_ANSWERED = "request never finally answered";
    static final String LEFT_IN_FLIGHT = "payment left in flight";
    static final String AFTER_503 = "503 followed by a charge";
    static final String SLOW_WAIT = "wait outlasted its bound";
    static final String REFUSED = "valid request refused";
    static final String QUEUE_UNANSWERED = "queue command never finally answered";
    static final String QUEUE_DIFFERENT = "queue command answered differently";
    static final String QUEUE_FINAL_HEADER = "queue answer marked final wrongly";
    static final String DEAD_EXECUTED = "executed command dead-lettered";
    static final String REFUND_OVER_CHARGE = "channel refunded more than it charged";
    static final String REFUND_LEDGER_VS_ORDER = "refund ledger disagrees with an order";
    static final String REFUND_DIFFERENT = "different final answers to a refund";
    static final String REFUND_VS_ANSWER = "refund record disagrees with an answer";
    static final String REFUND_VS_CHANNEL = "refund record disagrees with the channel";
    static final String REFUND_STATUS = "order status disagrees with its refunded amount";
    static final String REFUND_NEVER_ANSWERED = "refund never finally answered";
    static final String REFUND_REFUSED = "refund refused without reason";

    /** An order's statuses once paid, in the only order it may take them. */
    private static final List<String> PAID_STATUSES = List.of("PAID", "PARTIALLY_REFUNDED", "REFUNDED");

    /** A MySQL fault's effects are excused this long after it was healed: the pools reconnect. */
    private static final long MYSQL_MARGIN_MS = 2_000;
    /** A paused instance's lateness is excused this long after it went on: it works off what piled up. */
    private static final long PAUSE_MARGIN_MS = 2_000;
    /**
     * How long before a command's dead-lettering the entrance may have looked at its token: between the look and
     * the dead-lettering it publishes the command's answer, waiting for the broker's confirm up to
     * {@code payonce.queue.confirm-timeout} (5 s).
     */
    private static final long DEAD_LETTER_LOOK_MS = 5_000;

    /** One breach: its name, the request (or order) it concerns, what was seen, and when. */
    record Violation(String name, Request request, String orderKey, String detail, long atMs) {

        @Override
        public String toString() {
            return String.format("%s: %s%s", name, request != null ? "request #" + request.id + " " : "", detail);
        }
    }

    private final ChaosSettings settings;
    private final History history;
    private final Books books;
    private final List<Violation> violations = new ArrayList<>();
    private final Map<String, List<Request>> requestsByOrder = new LinkedHashMap<>();
    private final Map<String, Request> requestsByNumber = new HashMap<>();
    private final Map<String, List<Refund>> refundsByOrder = new HashMap<>();
    private final Map<String, Request> requestsByToken = new HashMap<>();
    /** When each payment or refund record of a token was opened, by token key. */
    private final Map<String, List<Long>> recordsOpenedByToken = new HashMap<>();
    /** The dead-lettered commands, as {@code merchant/correlation id}. */
    private final Set<String> deadCommands = new HashSet<>();

    private Checker(ChaosSettings settings, History history, Books books) {
        this.settings = settings;
        this.history = history;
        this.books = books;
        for (Request request : history.requests()) {
            requestsByOrder.computeIfAbsent(orderKey(request), k -> new ArrayList<>()).add(request);
            requestsByNumber.putIfAbsent(Books.key(request.merchant, request.intent.requestNo()), request);
            requestsByToken.putIfAbsent(Books.key(request.merchant, request.intent.token()), request);
        }
        for (Refund refund : history.refunds()) {
            refundsByOrder.computeIfAbsent(Books.key(refund.merchant, refund.orderNo), k -> new ArrayList<>()).add(refund);
        }
        books.paymentsByRequest.values().forEach(rows -> rows.forEach(row -> recordsOpenedByToken
                .computeIfAbsent(Books.key(row.merchant(), row.token()), k -> new ArrayList<>()).add(row.createdAtEpochMs())));
        books.refundsByNumber.values().forEach(rows -> rows.forEach(row -> recordsOpenedByToken
                .computeIfAbsent(Books.key(row.merchant(), row.token()), k -> new ArrayList<>()).add(row.createdAtEpochMs())));
        books.deadLetters.forEach(dead -> deadCommands.add(Books.key(dead.merchant(), dead.correlationId())));
    }

    /** Every violation found, the earliest request's first. */
    static List<Violation> check(ChaosSettings settings, History history, Books books) {
        Checker checker = new Checker(settings, history, books);
        checker.checkRequests();
        checker.checkOrders();
        checker.checkPayments();
        checker.checkRefunds();
        checker.checkRefundRecords();
        checker.checkDeadLetters();
        checker.violations.sort(Comparator.comparingLong(Violation::atMs));
        return List.copyOf(checker.violations);
    }

    private void checkRequests() {
        List<FaultWindow> mysqlFaults = history.faults().stream().filter(w -> w.kind().onMysql()).toList();
        List<FaultWindow> pauses = history.faults().stream().filter(w -> w.kind() == Kind.OWNER_PAUSED).toList();
        for (Request request : history.requests()) {
            List<Attempt> attempts = request.attempts();
            List<Attempt> finals = attempts.stream().filter(a -> Answers.isFinal(a.answer())).toList();
            String requestKey = Books.key(request.merchant, request.intent.requestNo());
            checkQueueCommands(request, !finals.isEmpty() || tokenHoldsFinal(request) || paymentSettled(requestKey));
            if (finals.isEmpty()) {
                Attempt last = attempts.isEmpty() ? null : attempts.get(attempts.size() - 1);
                add(NEVER_ANSWERED, request, attempts.size() + " copies, the last: "
                        + (last == null ? "none sent" : Answers.describe(last.answer())));
            } else {
                checkSameAnswers(request, finals);
            }
            for (Attempt attempt : finals) {
                Answer answer = attempt.answer();
                String says = books.channelSays(requestKey);
                if (Answers.isDeclined(answer) && !"DECLINED".equals(says)) {
                    add(PHANTOM_DECLINE, request, "answered at " + seconds(attempt.doneAtMs()) + ", the channel says " + says);
                    break;
                }
                if (Answers.isNotCompleted(answer) && !"CLOSED".equals(says)) {
                    add(LEDGER_VS_ANSWER, request, "402 payment_not_completed, the channel says " + says);
                    break;
                }
                if (Answers.isPaid(answer)) {
                    ChannelCharge word = books.channel.get(requestKey);
                    String txn = Answers.field(answer, "channel_txn_id");
                    if (!"SUCCEEDED".equals(says) || (txn != null && word != null && !txn.equals(word.txnId()))) {
                        add(LEDGER_VS_ANSWER, request, "200 PAID with " + txn + ", the channel says " + says
                                + (word == null ? "" : " " + word.txnId()));
                        break;
                    }
                }
                if (Answers.isRefusal(answer)) {
                    add(REFUSED, request, Answers.describe(answer));
                    break;
                }
            }
            checkNothingOpenedBefore503(request, attempts);
            for (Attempt attempt : attempts) {
                String slow = slowWait(attempt, mysqlFaults, pauses);
                if (slow != null) {
                    add(SLOW_WAIT, request, attempt.route() + " at " + seconds(attempt.sentAtMs()) + ": " + slow);
                    break;
                }
            }
        }
    }

    /** Every final answer of the request, and the token's stored answer once it has one, are one answer. */
    private void checkSameAnswers(Request request, List<Attempt> finals) {
        String different = differentAnswers(finals, Books.key(request.merchant, request.intent.token()));
        if (different != null) {
            add(DIFFERENT_ANSWERS, request, different);
        }
    }

    /** How the final answers of one request (or refund) and its token's stored answer differ, or null. */
    private String differentAnswers(List<Attempt> finals, String tokenKey) {
        Answer first = finals.get(0).answer();
        for (Attempt attempt : finals) {
            Answer other = attempt.answer();
            if (other.status() != first.status() || !Objects.equals(other.body(), first.body())) {
                return "first " + Answers.describe(first) + "; then, at " + seconds(attempt.sentAtMs()) + ", "
                        + Answers.describe(other);
            }
        }
        TokenRow token = books.tokens.get(tokenKey);
        if (token != null && "COMPLETED".equals(token.state()) && token.responseStatus() != null
                && (token.responseStatus() != first.status() || !Objects.equals(token.responseBody(), first.body()))) {
            return "answered " + Answers.describe(first) + "; the token stored " + token.responseStatus() + " "
                    + token.responseBody();
        }
        return null;
    }

    /**
     * Every queue command of a settled request finally answered ({@code final: true}), unless it was dead-lettered;
     * each one's final answers one answer; every answer's {@code final} header as its status says.
     */
    private void checkQueueCommands(Request request, boolean settled) {
        for (QueueCopy copy : request.queueCopies()) {
            if (copy.correlationId == null || copy.isReplyLost()) {
                continue;
            }
            List<Heard> heard = copy.answers();
            for (Heard one : heard) {
                String wrong = wronglyMarked(one);
                if (wrong != null) {
                    add(QUEUE_FINAL_HEADER, request, "command " + copy.correlationId + " sent at " + seconds(copy.sentAtMs)
                            + ", heard at " + seconds(one.atMs()) + ": " + wrong + ": " + describe(one.queueAnswer()));
                    break;
                }
            }
            List<Heard> finals = heard.stream().filter(h -> Boolean.TRUE.equals(h.finalHeader())).toList();
            if (!finals.isEmpty()) {
                QueueAnswer first = finals.get(0).queueAnswer();
                for (Heard other : finals) {
                    QueueAnswer answer = other.queueAnswer();
                    if (answer.status() != first.status() || !Objects.equals(answer.code(), first.code())
                            || !Objects.equals(answer.body(), first.body())) {
                        add(QUEUE_DIFFERENT, request, "command " + copy.correlationId + " sent at "
                                + seconds(copy.sentAtMs) + ": first " + describe(first) + "; then, heard at "
                                + seconds(other.atMs()) + ", " + describe(answer));
                        break;
                    }
                }
            } else if (settled && !deadCommands.contains(Books.key(request.merchant, copy.correlationId))) {
                add(QUEUE_UNANSWERED, request, "command " + copy.correlationId + " sent at " + seconds(copy.sentAtMs)
                        + ", " + (heard.isEmpty() ? "no answer"
                                : heard.size() + " answer(s), none final: " + heard.stream()
                                        .map(h -> describe(h.queueAnswer())).toList()));
            }
        }
    }

    /** How the answer's {@code final} header disagrees with its status, or null when it does not. */
    private static String wronglyMarked(Heard heard) {
        Boolean marked = heard.finalHeader();
        if (marked == null) {
            return "no final header";
        }
        Answer answer = heard.answer();
        if (answer.status() == 409 && "request_no_conflict".equals(Answers.code(answer))) {
            return null;
        }
        return marked == Answers.isFinal(answer) ? null : "marked final: " + marked;
    }

    /** Whether the request's payment record is settled: SUCCEEDED or FAILED. */
    private boolean paymentSettled(String requestKey) {
        return books.paymentsByRequest.getOrDefault(requestKey, List.of()).stream()
                .anyMatch(p -> "SUCCEEDED".equals(p.status()) || "FAILED".equals(p.status()));
    }

    /** Whether the request's token stored a final answer. */
    private boolean tokenHoldsFinal(Request request) {
        TokenRow token = books.tokens.get(Books.key(request.merchant, request.intent.token()));
        return token != null && "COMPLETED".equals(token.state()) && token.responseStatus() != null
                && Answers.isFinal(new Answer(token.responseStatus(), null, token.responseBody(), null, null, null, 0));
    }

    /** No dead letter's key had executed when the entrance looked at it. */
    private void checkDeadLetters() {
        for (Books.DeadLetter dead : books.deadLetters) {
            String tokenKey = Books.key(dead.merchant(), dead.key());
            long lookedAt = dead.deadAtEpochMs() > 0 ? dead.deadAtEpochMs() - DEAD_LETTER_LOOK_MS : Long.MAX_VALUE;
            String executed = executedBefore(tokenKey, lookedAt);
            if (executed == null) {
                continue;
            }
            Request request = requestsByToken.get(tokenKey);
            String detail = "command " + dead.correlationId() + " with key " + dead.key() + ", dead-lettered at "
                    + (dead.deadAtEpochMs() > 0 ? Instant.ofEpochMilli(dead.deadAtEpochMs()) : "an unknown time")
                    + ": " + executed;
            if (request != null) {
                add(DEAD_EXECUTED, request, detail);
            } else {
                violations.add(new Violation(DEAD_EXECUTED, null, null, "merchant " + dead.merchant() + ": " + detail,
                        Long.MAX_VALUE));
            }
        }
    }

    /** What shows the token executed before {@code epochMs}: a record of it opened, or it claimed or settled since. */
    private String executedBefore(String tokenKey, long epochMs) {
        for (long opened : recordsOpenedByToken.getOrDefault(tokenKey, List.of())) {
            if (opened < epochMs) {
                return "a record of its token opened at " + Instant.ofEpochMilli(opened);
            }
        }
        TokenRow token = books.tokens.get(tokenKey);
        if (token != null && !"AVAILABLE".equals(token.state()) && token.updatedAtEpochMs() < epochMs) {
            return "its token " + token.state() + " since " + Instant.ofEpochMilli(token.updatedAtEpochMs());
        }
        return null;
    }

    private static String describe(QueueAnswer answer) {
        return answer.status() + (answer.code() == null ? "" : " code " + answer.code())
                + (answer.replayed() ? " (replayed)" : "") + ": " + answer.body();
    }

    /**
     * A 503 from the service tells the client that nothing was charged and nothing can be under that request
     * unless it is sent again: the latest such answer (by HTTP, or any answer a queue command was told) before
     * which every copy sent was told so too leaves no payment record opened before it standing.
     */
    private void checkNothingOpenedBefore503(Request request, List<Attempt> attempts) {
        List<Attempt> http = attempts.stream().filter(a -> !a.byQueue()).toList();
        List<QueueCopy> commands = request.queueCopies().stream().filter(c -> c.correlationId != null).toList();
        List<Attempt> told = new ArrayList<>(http.stream().filter(Checker::tells503).toList());
        commands.forEach(command -> command.heardAttempts().stream().filter(Checker::tells503).forEach(told::add));
        Attempt latest = null;
        for (Attempt candidate : told) {
            long at = candidate.doneAtMs();
            boolean everyCopyTold = http.stream().filter(a -> a.sentAtMs() <= at).allMatch(Checker::tells503)
                    && commands.stream().filter(c -> c.sentAtMs <= at)
                            .allMatch(c -> c.heardAttempts().stream().anyMatch(Checker::tells503));
            if (everyCopyTold && (latest == null || at > latest.doneAtMs())) {
                latest = candidate;
            }
        }
        if (latest == null) {
            return;
        }
        String requestKey = Books.key(request.merchant, request.intent.requestNo());
        for (PaymentRow payment : books.paymentsByRequest.getOrDefault(requestKey, List.of())) {
            long openedBefore = latest.doneAtEpochMs() - payment.createdAtEpochMs();
            if (openedBefore > 0) {
                add(AFTER_503, request, "503 at " + seconds(latest.doneAtMs()) + " (" + latest.route() + "), yet payment "
                        + payment.requestNo() + ", opened " + openedBefore + " ms before it, is " + payment.status()
                        + (payment.failure() == null ? "" : " (" + payment.failure() + ")") + "; the channel says "
                        + books.channelSays(requestKey));
                return;
            }
        }
    }

    /**
     * The service's 503 temporarily_unavailable: over HTTP from the one instance the copy reached, sent there
     * directly or through a gateway, which passes a request on to another instance only when the first never
     * received it (src/main/docker/nginx/payonce.conf), so that no try on another is hidden behind its answer; on
     * the queue, any a command was told: the entrance publishes one only with a dead letter, for a command that
     * never executed, or as the answer now of a copy whose final answer a record owes.
     */
    private static boolean tells503(Attempt attempt) {
        Answer answer = attempt.answer();
        return answer.status() == 503 && "temporarily_unavailable".equals(Answers.code(answer));
    }

    /** Why the attempt outlasted its bound, or null when it did not, or is not held to one. */
    private String slowWait(Attempt attempt, List<FaultWindow> mysqlFaults, List<FaultWindow> pauses) {
        if (!attempt.direct() || attempt.hangUp()) {
            return null;
        }
        long from = attempt.sentAtMs();
        long to = attempt.doneAtMs();
        if (mysqlFaults.stream().anyMatch(w -> w.overlaps(from, to, MYSQL_MARGIN_MS))) {
            return null;
        }
        // a paused owner answers late by its pause, and a client may give up on it first
        long paused = pauses.stream()
                .filter(w -> w.fault.instance() == attempt.instance() && w.overlaps(from, to, PAUSE_MARGIN_MS))
                .mapToLong(w -> Math.min(w.endMs(), to) - w.startMs).sum();
        Answer answer = attempt.answer();
        long slack = settings.slack().toMillis();
        if (!answer.answered()) {
            return Answers.clientTimedOut(answer) && paused == 0
                    ? "no answer within the client's " + Traffic.PATIENCE.toSeconds() + " s"
                    : null;
        }
        boolean waited = Answers.isInProgress(answer) || answer.isReplay();
        long bound = (waited ? ChaosSettings.WAIT_BOUND.toMillis()
                : ChaosSettings.CHANNEL_TIMEOUT.plus(ChaosSettings.OWNER_EXTRA).toMillis()) + paused;
        if (answer.elapsedMs() <= bound + slack) {
            return null;
        }
        return (waited ? "a duplicate's wait, bound " : "a first execution, bound ") + bound + " ms + " + slack
                + " ms" + (paused > 0 ? " (" + paused + " ms of it its instance's pause)" : "") + ": "
                + Answers.describe(answer);
    }

    private void checkOrders() {
        Map<String, List<OrderSeen>> seen = new HashMap<>();
        for (OrderSeen one : history.orders()) {
            seen.computeIfAbsent(Books.key(one.merchant(), one.orderNo()), k -> new ArrayList<>()).add(one);
        }
        Set<String> orderKeys = new TreeSet<>(books.orders.keySet());
        orderKeys.addAll(requestsByOrder.keySet());
        for (String orderKey : orderKeys) {
            OrderRow order = books.orders.get(orderKey);
            Request request = firstRequest(orderKey);
            String status = order == null ? "missing" : order.status();
            Ledger ledger = books.ledgers.get(orderKey);
            long charges = ledger == null ? -1 : ledger.charges();
            List<PaymentRow> payments = books.paymentsOfOrder(orderKey);
            long succeeded = payments.stream().filter(p -> "SUCCEEDED".equals(p.status())).count();
            if (charges > 1) {
                addForOrder(SECOND_CHARGE, request, orderKey, charges + " charges at the channel, order " + status);
            } else if (charges >= 0 && (paid(status) != (charges == 1) || paid(status) != (succeeded == 1))) {
                addForOrder(LEDGER_VS_ORDER, request, orderKey, "order " + status + ", " + charges + " charge(s) at the channel, "
                        + succeeded + " payment(s) SUCCEEDED");
            }
            if ("PAYING".equals(status)) {
                addForOrder(LEFT_IN_FLIGHT, request, orderKey, "order still PAYING");
            }
            checkNeverBack(orderKey, request, status, seen.getOrDefault(orderKey, List.of()));
            if (order != null) {
                checkRefundedAmounts(orderKey, request, order, ledger == null ? 0 : ledger.charges());
            }
        }
    }

    /** An order's statuses after payment, PAID first; -1 for any before. */
    private static int paidRank(String status) {
        return PAID_STATUSES.indexOf(status);
    }

    private static boolean paid(String status) {
        return paidRank(status) >= 0;
    }

    /** The order's refunded amount, against the channel's refund ledger, its refund records and its own status. */
    private void checkRefundedAmounts(String orderKey, Request request, OrderRow order, long charges) {
        RefundLedger ledger = books.refundLedgers.get(orderKey);
        List<RefundRow> records = books.refundsOfOrder(orderKey);
        long succeeded = records.stream().filter(r -> "SUCCEEDED".equals(r.status())).count();
        if (ledger != null && ledger.refundedAmount() > charges * order.amount()) {
            addForOrder(REFUND_OVER_CHARGE, request, orderKey, ledger.refundedAmount() + " refunded at the channel, "
                    + charges + " charge(s) of " + order.amount());
        }
        if (ledger != null && ledger.refunds() >= 0
                && (ledger.refundedAmount() != order.refundedAmount() || ledger.refunds() != succeeded)) {
            addForOrder(REFUND_LEDGER_VS_ORDER, request, orderKey, "the channel refunded " + ledger.refundedAmount()
                    + " in " + ledger.refunds() + " refund(s); the order shows " + order.refundedAmount() + " refunded, "
                    + succeeded + " refund record(s) SUCCEEDED");
        }
        long refunded = order.refundedAmount();
        boolean consistent = switch (order.status()) {
            case "REFUNDED" -> refunded == order.amount();
            case "PARTIALLY_REFUNDED" -> refunded > 0 && refunded < order.amount();
            default -> refunded == 0;
        };
        if (!consistent) {
            addForOrder(REFUND_STATUS, request, orderKey, "order " + order.status() + " of " + order.amount() + ", "
                    + refunded + " refunded");
        }
        if (order.reservedAmount() != 0) {
            addForOrder(LEFT_IN_FLIGHT, request, orderKey, order.reservedAmount() + " still reserved for refunds");
        }
    }

    /**
     * Once seen paid, an order is seen only as far on (PAID, PARTIALLY_REFUNDED, REFUNDED) and as far refunded, or
     * further, by every reading asked after; a 200 PAID answer (maybe a replay of the past) says only that it was
     * paid, so it is held to nothing later.
     */
    private void checkNeverBack(String orderKey, Request request, String finalStatus, List<OrderSeen> seen) {
        OrderSeen firstPaid = seen.stream().filter(s -> paid(s.status()))
                .min(Comparator.comparingLong(OrderSeen::receivedAtMs)).orElse(null);
        if (firstPaid == null) {
            return;
        }
        List<OrderSeen> readings = seen.stream().filter(s -> s.version() >= 0).toList();
        for (OrderSeen earlier : seen) {
            for (OrderSeen later : readings) {
                boolean back = paidRank(later.status()) < (earlier.version() < 0 ? 0 : paidRank(earlier.status()))
                        || later.refundedAmount() < earlier.refundedAmount();
                if (paid(earlier.status()) && later.sentAtMs() > earlier.receivedAtMs() && back) {
                    addForOrder(MOVED_BACK, request, orderKey, "seen " + describe(earlier) + " at "
                            + seconds(earlier.receivedAtMs()) + " (" + earlier.how() + "), then " + describe(later)
                            + " asked at " + seconds(later.sentAtMs()));
                    return;
                }
            }
        }
        int furthest = seen.stream().mapToInt(s -> s.version() < 0 ? 0 : paidRank(s.status())).max().orElse(0);
        if (paidRank(finalStatus) < furthest) {
            addForOrder(MOVED_BACK, request, orderKey, "seen " + PAID_STATUSES.get(furthest) + ", " + finalStatus
                    + " in the end");
        }
    }

    private static String describe(OrderSeen seen) {
        return seen.status() + (seen.refundedAmount() > 0 ? " (" + seen.refundedAmount() + " refunded)" : "");
    }

    /** Every refund finally answered, each copy the same, each answer borne out by its record. */
    private void checkRefunds() {
        for (Refund refund : history.refunds()) {
            List<Attempt> finals = refund.attempts().stream().filter(a -> Answers.isRefundFinal(a.answer())).toList();
            if (finals.isEmpty()) {
                List<Attempt> attempts = refund.attempts();
                addForRefund(REFUND_NEVER_ANSWERED, refund, attempts.size() + " copies, the last: "
                        + (attempts.isEmpty() ? "none sent" : Answers.describe(attempts.get(attempts.size() - 1).answer())));
                continue;
            }
            String different = differentAnswers(finals, Books.key(refund.merchant, refund.token));
            if (different != null) {
                addForRefund(REFUND_DIFFERENT, refund, different);
            }
            Answer answer = finals.get(0).answer();
            String refundKey = Books.key(refund.merchant, refund.refundNo);
            List<RefundRow> records = books.refundsByNumber.getOrDefault(refundKey, List.of());
            RefundRow record = records.isEmpty() ? null : records.get(0);
            String recorded = record == null ? "no record"
                    : "record " + record.status() + (record.failure() == null ? "" : " (" + record.failure() + ")")
                            + (record.refundId() == null ? "" : " " + record.refundId());
            boolean borneOut;
            if (Answers.isRefunded(answer)) {
                borneOut = record != null && "SUCCEEDED".equals(record.status())
                        && Objects.equals(Answers.field(answer, "channel_refund_id"), record.refundId());
            } else if (Answers.isRefundDeclined(answer)) {
                borneOut = record != null && "FAILED".equals(record.status()) && "DECLINED".equals(record.failure());
            } else if (Answers.isRefundNotCompleted(answer)) {
                borneOut = record != null && "FAILED".equals(record.status()) && "CLOSED".equals(record.failure());
            } else {
                borneOut = !Answers.isRefundRefused(answer) || record == null;
            }
            if (!borneOut) {
                addForRefund(REFUND_VS_ANSWER, refund, Answers.describe(answer) + "; " + recorded);
            }
            String refused = unreasonedRefusal(refund, answer);
            if (refused != null) {
                addForRefund(REFUND_REFUSED, refund, Answers.describe(answer) + ": " + refused);
            }
        }
    }

    /** Why a final refusal of the refund had no reason the contract gives, or null when it had one (or is none). */
    private String unreasonedRefusal(Refund refund, Answer answer) {
        if (answer.status() < 400 || answer.status() == 402) {
            return null;
        }
        String orderKey = Books.key(refund.merchant, refund.orderNo);
        OrderRow order = books.orders.get(orderKey);
        String code = Answers.code(answer);
        if (answer.status() == 422 && "refund_exceeds_payment".equals(code)) {
            long asked = refundsByOrder.getOrDefault(orderKey, List.of()).stream().mapToLong(r -> r.amount).sum();
            return order != null && asked <= order.amount()
                    ? "every refund asked of the order, " + asked + " together, fits in its " + order.amount()
                    : null;
        }
        if (answer.status() == 409 && "order_not_refundable".equals(code)) {
            return order != null && order.refundedAmount() < order.amount()
                    ? "the paid order was never refunded in full (" + order.refundedAmount() + " of " + order.amount()
                            + " in the end)"
                    : null;
        }
        return "the contract gives a refund of a paid order of the client's own no such answer";
    }

    /** Every refund record settled, and as the channel says. */
    private void checkRefundRecords() {
        for (List<RefundRow> records : books.refundsByNumber.values()) {
            RefundRow record = records.get(0);
            String refundKey = Books.key(record.merchant(), record.refundNo());
            String orderKey = Books.key(record.merchant(), record.orderNo());
            Request request = firstRequest(orderKey);
            String says = books.channelSaysOfRefund(refundKey);
            Books.ChannelRefund word = books.channelRefunds.get(refundKey);
            String what = "refund " + record.refundNo() + " " + record.status()
                    + (record.failure() == null ? "" : " (" + record.failure() + ")");
            if ("PROCESSING".equals(record.status())) {
                addForOrder(LEFT_IN_FLIGHT, request, orderKey, what + " still");
            } else if ("SUCCEEDED".equals(record.status())
                    ? !"SUCCEEDED".equals(says) || !Objects.equals(record.refundId(), word.refundId())
                    : "CLOSED".equals(record.failure()) ? !"CLOSED".equals(says) : !"DECLINED".equals(says)) {
                addForOrder(REFUND_VS_CHANNEL, request, orderKey, what + (record.refundId() == null ? "" : " "
                        + record.refundId()) + ", the channel says " + says
                        + (word == null || word.refundId() == null ? "" : " " + word.refundId()));
            }
        }
    }

    private void checkPayments() {
        for (Map.Entry<String, List<PaymentRow>> entry : books.paymentsByRequest.entrySet()) {
            PaymentRow payment = entry.getValue().get(0);
            String orderKey = Books.key(payment.merchant(), payment.orderNo());
            Request request = requestFor(entry.getKey());
            if (entry.getValue().size() > 1) {
                addForOrder(SECOND_PAYMENT, request, orderKey, entry.getValue().size() + " records for " + entry.getKey());
            }
            String says = books.channelSays(entry.getKey());
            String status = payment.status();
            if ("PROCESSING".equals(status)) {
                addForOrder(LEFT_IN_FLIGHT, request, orderKey, "payment " + payment.requestNo() + " still PROCESSING");
            } else if ("SUCCEEDED".equals(status) ? !"SUCCEEDED".equals(says)
                    : "CLOSED".equals(payment.failure()) ? !"CLOSED".equals(says) : !"DECLINED".equals(says)) {
                addForOrder(PAYMENT_VS_CHANNEL, request, orderKey, "payment " + payment.requestNo() + " " + status
                        + (payment.failure() == null ? "" : " (" + payment.failure() + ")") + ", the channel says " + says);
            }
        }
    }

    private Request firstRequest(String orderKey) {
        List<Request> requests = requestsByOrder.get(orderKey);
        return requests == null || requests.isEmpty() ? null : requests.get(0);
    }

    private Request requestFor(String requestKey) {
        return requestsByNumber.get(requestKey);
    }

    private void add(String name, Request request, String detail) {
        violations.add(new Violation(name, request, orderKey(request), detail, request.firstSentMs()));
    }

    private void addForRefund(String name, Refund refund, String detail) {
        String orderKey = Books.key(refund.merchant, refund.orderNo);
        violations.add(new Violation(name, null, orderKey, "refund #" + refund.id + " " + refund.refundNo + " of "
                + refund.amount + ": " + detail, refund.firstSentMs()));
    }

    private void addForOrder(String name, Request request, String orderKey, String detail) {
        violations.add(new Violation(name, request, orderKey, "order " + orderKey + ": " + detail,
                request == null ? Long.MAX_VALUE : request.firstSentMs()));
    }

    private static String orderKey(Request request) {
        return Books.key(request.merchant, request.intent.orderNo());
    }

    private static String seconds(long ms) {
        return String.format("%.3f s", ms / 1000.0);
    }
}
