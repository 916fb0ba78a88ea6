package io.payonce.payment;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import jakarta.enterprise.context.ApplicationScoped;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.PayOnceConfig;
import io.payonce.channel.ChargeResult;
import io.payonce.channel.PaymentChannel;
import io.payonce.database.Database;
import io.payonce.database.MysqlErrors;
import io.payonce.database.UtcTime;
import io.payonce.idempotency.DuplicateMetrics;
import io.payonce.idempotency.DuplicateMetrics.Layer;
import io.payonce.idempotency.OwnerAnswer;
import io.payonce.idempotency.Ownership;
import io.payonce.idempotency.StoredResponse;
import io.payonce.idempotency.TemporarilyUnavailableException;
import io.payonce.idempotency.TokenClaim;
import io.payonce.idempotency.TokenService;
import io.payonce.idempotency.TokenTakenException;
import io.payonce.order.Order;
import io.payonce.order.OrderRepository;
import io.payonce.order.OrderStatus;
import io.quarkus.runtime.Startup;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.SqlClient;
import org.jboss.logging.Logger;

/**
 * A payment's phases, each returning the next {@link Step}: open (the token's claim, layer 2's record and
 * layer 3's move to PAYING in one transaction), charge (the channel, outside any transaction), then settle
 * on the channel's final word, undo a charge the channel refused before accepting it, or answer
 * "processing" when nobody can tell yet; and for a payment taken over by reconciliation, query and close.
 * This class is the only caller of the channel for payments: a request runs it from {@link #execute}, and
 * reconciliation resumes the same phases with {@link #resume}. The class is longer than the others on
 * purpose: a payment's phases and the steps between them read top to bottom in one place, so every outcome
 * of every phase can be checked against the next.
 *
 * <p>Ownership is fenced. Whoever acts on a payment holds it under an epoch ({@link Held}): the opener's is
 * its token claim's, and a take-over by reconciliation increments it before the channel is called. Every
 * later write of an owner names its epoch in SQL, and one that finds it gone changes nothing; an owner
 * checks its epoch again right before it sends a charge. Only the opener, while its epoch holds, undoes a
 * charge the channel refused before accepting it; an owner that took over ends a payment as "not charged"
 * only by closing it at the channel. Settling on the channel's final word needs no epoch: the word is the
 * same for everyone.
 *
 * <p>Bound: an owner answers within the channel timeout plus {@link #DATABASE_TIMES_TO_ANSWER} database
 * timeouts, {@link #DATABASE_TIMES_BEFORE_CHARGE} of them before its charge is sent (open, a COMMIT in
 * doubt resolved, the epoch checked again); each phase is bounded on its own.
 */
@Startup
@ApplicationScoped
public class PaymentExecutor {

    /** Database timeouts an owner may spend before its charge is sent: open, in-doubt resolution, epoch check. */
    public static final int DATABASE_TIMES_BEFORE_CHARGE = 3;
    /** Database timeouts in an owner's longest path to its answer: those before the charge, settle, interim. */
    public static final int DATABASE_TIMES_TO_ANSWER = DATABASE_TIMES_BEFORE_CHARGE + 2;

    private static final Logger LOG = Logger.getLogger(PaymentExecutor.class);

    private final Database db;
    private final OrderRepository orders;
    private final PaymentRepository payments;
    private final TokenService tokens;
    private final PaymentChannel channel;
    private final Settlement settlement;
    private final OutcomeRenderer renderer;
    private final DuplicateMetrics metrics;
    private final Counter chargesSentAgain;
    private final Duration lease;

    PaymentExecutor(Database db, OrderRepository orders, PaymentRepository payments, TokenService tokens,
            PaymentChannel channel, Settlement settlement, OutcomeRenderer renderer, DuplicateMetrics metrics,
            MeterRegistry meters, PayOnceConfig config) {
        this.db = db;
        this.orders = orders;
        this.payments = payments;
        this.tokens = tokens;
        this.channel = channel;
        this.settlement = settlement;
        this.renderer = renderer;
        this.metrics = metrics;
        this.chargesSentAgain = meters.counter("payonce.reconcile.charges_sent_again");
        this.lease = config.idempotency().lease();
    }

    /**
     * A payment as its current owner holds it: the record, the epoch it holds it under, and since when (on
     * this process's monotonic clock) its lease runs. {@code opener} is the request that opened it, the only
     * owner that may undo it; {@code ownership} its token claim. {@code order} is the order as read when the
     * payment was opened, or empty to read it when settling.
     */
    record Held(Payment payment, int epoch, boolean opener, Optional<Ownership> ownership, Optional<Order> order,
            long sinceNanos, Duration lease, Duration backoff) {

        /** True while nobody can have taken the payment over: well within the lease its owner took it with. */
        boolean surelyHeld() {
            return System.nanoTime() - sinceNanos < lease.toNanos() / 2;
        }
    }

    /** Where a payment goes next: each phase returns one of these; {@link End} ends the run. */
    private sealed interface Step {
    }

    /** The payment record exists and its order is PAYING: the charge may be sent (by its owner, still). */
    private record Charge(Held held) implements Step {
    }

    /** Reconciliation asks the channel what became of the charge; past give-up-after it closes instead. */
    private record Query(Held held, boolean overdue) implements Step {
    }

    /** Nothing may be charged under the number any more: close it at the channel. */
    private record Close(Held held) implements Step {
    }

    /** The channel gave its final word (charged, declined or closed): settle on it. */
    private record Settle(Held held, ChargeResult word) implements Step {
    }

    /** The channel refused the opener's charge before accepting it: the attempt is taken back. */
    private record Undo(Held held, String reason) implements Step {
    }

    /**
     * Nobody can tell yet whether the channel charged (or refunded): the request is answered 202. {@code held}
     * when its record stands, so the 202 is owed and recovery settles it; empty when a COMMIT that wrote or
     * deleted the record is in doubt, so nobody can say yet whether a record exists.
     */
    private record Processing(PaymentKind kind, String orderNo, String requestNo, Optional<Held> held) implements Step {

        static Processing of(Held held) {
            Payment p = held.payment();
            return new Processing(p.kind(), p.orderNo(), p.requestNo(), Optional.of(held));
        }

        static Processing inDoubt(Opening opening) {
            return new Processing(opening.kind(), opening.orderNo(), opening.number(), Optional.empty());
        }

        static Processing inDoubt(Payment p) {
            return new Processing(p.kind(), p.orderNo(), p.requestNo(), Optional.empty());
        }
    }

    /** Reconciliation could not settle it yet: looked at again after a backoff. */
    private record Postpone(Held held, ChargeResult word) implements Step {
    }

    /** The owner lost the payment to a take-over: it answers what the rows say. */
    private record Lost(Held held) implements Step {
    }

    /** A layer refused the request after the claim, and the opening rolled back: store that answer. */
    private record Refused(Opening opening, TokenClaim claim, PayOutcome outcome) implements Step {
    }

    /**
     * The opening COMMIT's outcome is unknown: resolve it for certain, then look whether it happened, by the id
     * its insert was given (a copy of the request may have opened a record of its own since, under the same
     * first-claim epoch, had this opening rolled back).
     */
    private record LookAgain(Opening opening, Ownership owner, long paymentId, long sinceNanos,
            Database.CommitUnknownException unknown) implements Step {
    }

    /** What an opening is for: a charge or a refund, of whose order, under which number, with which token. */
    private record Opening(PaymentKind kind, String merchantId, String token, String orderNo, String number) {

        static Opening of(PayCommand cmd) {
            return new Opening(PaymentKind.CHARGE, cmd.merchantId(), cmd.token(), cmd.orderNo(), cmd.requestNo());
        }
    }

    /** How a run ends. */
    private sealed interface End extends Step {
    }

    /** The request's answer, and whether it was stored with the token. */
    private record Answer(OwnerAnswer answer) implements End {

        Answer(StoredResponse response) {
            this(OwnerAnswer.stored(response));
        }
    }

    /** Reconciliation settled the payment (or found it settled), on the channel's word. */
    private record Settled(Settlement.Settled settled, ChargeResult word) implements End {
    }

    /** Reconciliation left it for later. */
    private record Postponed(ChargeResult word) implements End {
    }

    /**
     * What resuming a payment taken over came to: settled (by this call or before it, with the channel's word
     * it rests on), or postponed.
     */
    public sealed interface Resumed {
        record Settled(Settlement.Settled settled, ChargeResult word) implements Resumed {
        }

        record Postponed(ChargeResult word) implements Resumed {
        }
    }

    /**
     * Executes the command as the owner of its token's claim (made in the opening transaction, so the three
     * layers cost one commit) and answers. Fails only with {@link TokenTakenException} (the token's row
     * exists: nothing was done) or {@link TemporarilyUnavailableException} (nothing was charged, and nothing
     * can be under this request later); once a charge may have been sent every failure becomes the 202 of
     * {@link Processing}, never a retryable error.
     */
    public Uni<OwnerAnswer> execute(PayCommand cmd, TokenClaim claim) {
        return answered(open(cmd, claim), cmd.requestNo());
    }

    /**
     * Refunds {@code amount} of a paid order as the owner of its token's claim, on the same terms as
     * {@link #execute}: the claim, the refund's record and the reservation of its amount on the order in one
     * transaction, then the channel's refund call with {@code refundNo}, then the same phases as a charge's.
     */
    public Uni<OwnerAnswer> refund(String merchantId, String token, String orderNo, String refundNo, long amount,
            TokenClaim claim) {
        Opening opening = new Opening(PaymentKind.REFUND, merchantId, token, orderNo, refundNo);
        return answered(openRefund(opening, amount, claim), refundNo);
    }

    private Uni<OwnerAnswer> answered(Uni<Step> opened, String number) {
        return opened.flatMap(this::run).map(end -> switch (end) {
            case Answer answer -> answer.answer();
            case Settled settled -> OwnerAnswer.stored(settled.settled().response());
            case Postponed postponed -> throw new IllegalStateException("a request's run postponed " + number);
        });
    }

    /**
     * Resumes a payment reconciliation took over under {@code epoch}: asks the channel, and completes it on
     * its word with the payment's own request number (sending the same charge again when it never arrived,
     * closing it past give-up-after), or postpones it by {@code backoff}.
     */
    public Uni<Resumed> resume(Payment payment, boolean overdue, Duration claimLease, Duration backoff) {
        Held held = new Held(payment, payment.epoch(), false, Optional.empty(), Optional.empty(), System.nanoTime(),
                claimLease, backoff);
        return run(new Query(held, overdue))
                // a phase that failed (the database, mostly) leaves the payment for a look after the backoff, not
                // after the whole claim lease
                .onFailure().recoverWithUni(e -> {
                    LOG.warnf("reconciling %s failed, looked at again after its backoff: %s", payment.requestNo(),
                            e.toString());
                    return run(new Postpone(held, new ChargeResult.Unknown(e.toString())));
                })
                .map(end -> switch (end) {
                    case Settled settled -> new Resumed.Settled(settled.settled(), settled.word());
                    case Postponed postponed -> new Resumed.Postponed(postponed.word());
                    case Answer answer -> throw new IllegalStateException("a take-over answered " + payment.requestNo());
                });
    }

    /** Runs the phases from {@code step} on, until one ends the run. */
    private Uni<End> run(Step step) {
        if (step instanceof End end) {
            return Uni.createFrom().item(end);
        }
        return phase(step).flatMap(this::run);
    }

    private Uni<Step> phase(Step step) {
        return switch (step) {
            case Charge charge -> charge(charge.held());
            case Query query -> query(query.held(), query.overdue());
            case Close close -> close(close.held());
            case Settle settle -> settle(settle.held(), settle.word());
            case Undo undo -> undo(undo.held(), undo.reason());
            case Processing processing -> processing(processing);
            case Postpone postpone -> postpone(postpone.held(), postpone.word());
            case Lost lost -> lost(lost.held());
            case Refused refused -> answerRefusal(refused.opening(), refused.claim(), refused.outcome());
            case LookAgain again -> lookAgain(again);
            case End end -> Uni.createFrom().item(end);
        };
    }

    /**
     * Open: the claim, layer 2 then layer 3, in one transaction. Leads to {@link Charge}, to an {@link Answer}
     * stored in the same transaction (unknown order, wrong amount), to {@link Refused} once a layer's refusal
     * rolled everything back, or to {@link LookAgain}.
     */
    private Uni<Step> open(PayCommand cmd, TokenClaim claim) {
        return open(Opening.of(cmd), claim, "the charge",
                (tx, owner, order, since, inserted) -> openWith(tx, cmd, owner, order, since, inserted));
    }

    /**
     * Open a refund: the claim, layer 2 (the refund's record, unique per refund number) and the reservation of
     * its amount on the order, in one transaction. The reservation names no version (see
     * {@link OrderRepository#reserve}): refunds racing on one order all pass while they fit, and a deadlock
     * or a Galera conflict runs the whole transaction again ({@link Database#inTransaction}). Its refusals are
     * answered as a payment's are; an unknown order's answer is stored in the same transaction.
     */
    private Uni<Step> openRefund(Opening opening, long amount, TokenClaim claim) {
        return open(opening, claim, "the refund", (tx, owner, order, since, inserted) -> order.isEmpty()
                ? answerIn(tx, owner, new PayOutcome.RefundOrderNotFound(opening.orderNo(), opening.number()))
                : reserveRefund(tx, opening, amount, owner, order.get(), since, inserted));
    }

    /** What an opening does in its transaction once the claim is made and the order read. */
    @FunctionalInterface
    private interface OpeningWork {
        Uni<Step> run(SqlClient tx, Ownership owner, Optional<Order> order, long since, AtomicLong inserted);
    }

    /**
     * An opening transaction of either kind: the claim and the order's read go out together (the read takes
     * no lock and changes nothing, so it is harmless whatever happens to the claim), then {@code work}. A
     * layer's refusal rolls everything back and becomes {@link Refused}; a COMMIT in doubt (no answer, or an
     * error that may have committed) becomes {@link LookAgain}; any other failure, certainly rolled back
     * before anything can have been sent, a 503.
     */
    private Uni<Step> open(Opening opening, TokenClaim claim, String what, OpeningWork work) {
        long since = System.nanoTime();
        AtomicReference<Ownership> claimed = new AtomicReference<>();
        AtomicLong inserted = new AtomicLong();
        return db.inTransaction(tx -> Uni.combine().all()
                .unis(tokens.claimIn(tx, opening.merchantId(), claim), orders.find(tx, opening.merchantId(),
                        opening.orderNo()))
                .with((owner, order) -> {
                    claimed.set(owner);
                    return order;
                })
                .flatMap(order -> work.run(tx, claimed.get(), order, since, inserted)))
                .onFailure(Stop.class).recoverWithItem(stop -> new Refused(opening, claim, ((Stop) stop).outcome))
                .onFailure(MysqlErrors::isDuplicateKey)
                .recoverWithUni(dup -> numberTaken(opening).map(outcome -> (Step) new Refused(opening, claim, outcome)))
                .onFailure(RefundDoesNotFit.class).recoverWithUni(misfit -> db.bounded(orders.find(opening.merchantId(),
                        opening.orderNo())).map(order -> (Step) new Refused(opening, claim, order
                                .filter(o -> OrderStatus.REFUNDABLE.contains(o.status()))
                                .<PayOutcome>map(o -> new PayOutcome.RefundExceedsPayment(opening.orderNo(), opening.number()))
                                .orElseGet(() -> new PayOutcome.OrderNotRefundable(opening.orderNo(), opening.number())))))
                .onFailure(Database.CommitUnknownException.class).recoverWithItem(unknown -> {
                    LOG.warnf("the opening commit of %s is in doubt: %s", opening.number(), unknown.getCause());
                    return new LookAgain(opening, claimed.get(), inserted.get(), since,
                            (Database.CommitUnknownException) unknown);
                })
                .onFailure(e -> !(e instanceof TokenTakenException))
                .transform(e -> new TemporarilyUnavailableException("database unavailable before " + what, e));
    }

    /**
     * The refund's record, then its reservation. An order read as not refundable is refused at once; one whose
     * reservation fails is looked at again after the rollback ({@link RefundDoesNotFit}), since the read took
     * no lock and only the reservation's statement saw the order as it is: refundable then, the amount did
     * not fit.
     */
    private Uni<Step> reserveRefund(SqlClient tx, Opening opening, long amount, Ownership owner, Order order,
            long since, AtomicLong inserted) {
        if (!OrderStatus.REFUNDABLE.contains(order.status())) {
            return Uni.createFrom().failure(new Stop(new PayOutcome.OrderNotRefundable(opening.orderNo(),
                    opening.number())));
        }
        return payments.insert(tx, PaymentKind.REFUND, opening.merchantId(), opening.number(), opening.orderNo(),
                opening.token(), amount, order.currency(), lease, owner.epoch())
                .invoke(inserted::set)
                .flatMap(refundId -> orders.reserve(tx, order, amount).map(reserved -> {
                    if (!reserved) {
                        throw new RefundDoesNotFit();
                    }
                    Payment refund = opened(refundId, opening, amount, order.currency(), owner.epoch());
                    return new Charge(new Held(refund, owner.epoch(), true, Optional.of(owner), Optional.of(order),
                            since, lease, Duration.ZERO));
                }));
    }

    /** The reservation did not fit: rolled back, and answered once the order is read again. */
    private static final class RefundDoesNotFit extends RuntimeException {
        RefundDoesNotFit() {
            super(null, null, false, false);
        }
    }

    /**
     * Layer 2 then layer 3 after the claim. The order was read without a lock: the conditional update alone
     * decides, so two requests for one order cannot both move it whatever they read. The UPDATE waits for
     * the INSERT's answer: sent together, after a deadlock that rolled the INSERT's transaction back MySQL
     * would run the UPDATE on its own, in autocommit.
     */
    private Uni<Step> openWith(SqlClient tx, PayCommand cmd, Ownership owner, Optional<Order> found, long since,
            AtomicLong inserted) {
        if (found.isEmpty()) {
            return answerIn(tx, owner, new PayOutcome.OrderNotFound(cmd.orderNo(), cmd.requestNo()));
        }
        Order order = found.get();
        if (order.amount() != cmd.amount() || (cmd.currency() != null && !cmd.currency().equals(order.currency()))) {
            return answerIn(tx, owner, new PayOutcome.AmountMismatch(cmd.orderNo(), cmd.requestNo()));
        }
        return payments.insert(tx, PaymentKind.CHARGE, cmd.merchantId(), cmd.requestNo(), cmd.orderNo(), cmd.token(),
                order.amount(), order.currency(), lease, owner.epoch())
                .invoke(inserted::set)
                .flatMap(paymentId -> orders.transition(tx, order, OrderStatus.PENDING, OrderStatus.PAYING, UtcTime.now())
                        .map(moved -> {
                            if (!moved) {
                                metrics.stopped(Layer.STATE_MACHINE);
                                throw new Stop(new PayOutcome.OrderNotPayable(cmd.orderNo(), cmd.requestNo()));
                            }
                            Payment payment = opened(paymentId, Opening.of(cmd), order.amount(), order.currency(),
                                    owner.epoch());
                            return new Charge(new Held(payment, owner.epoch(), true, Optional.of(owner),
                                    Optional.of(order.movedTo(OrderStatus.PAYING, UtcTime.now())), since, lease,
                                    Duration.ZERO));
                        }));
    }

    /** The record an opening inserted, charge or refund, as the phases after it need it. */
    private static Payment opened(long id, Opening opening, long amount, String currency, int epoch) {
        return new Payment(id, opening.merchantId(), opening.number(), opening.orderNo(), opening.token(), amount,
                currency, PaymentStatus.PROCESSING, null, null, null, null, 0, epoch, opening.kind());
    }

    /** Rolls the opening transaction back with an outcome to answer. */
    private static final class Stop extends RuntimeException {
        final PayOutcome outcome;

        Stop(PayOutcome outcome) {
            super(null, null, false, false);
            this.outcome = outcome;
        }
    }

    /** A stop found before anything was written but the claim: its answer goes into the same transaction. */
    private Uni<Step> answerIn(SqlClient tx, Ownership owner, PayOutcome outcome) {
        StoredResponse response = renderer.render(outcome);
        return tokens.complete(tx, owner, response).replaceWith(new Answer(response));
    }

    /**
     * The unique index refused the record: this token's own earlier attempt (cut short before its answer was
     * stored), or another request's, final once that one is settled.
     */
    private Uni<PayOutcome> numberTaken(Opening opening) {
        metrics.stopped(Layer.UNIQUE_INDEX);
        return db.bounded(payments.find(opening.kind(), opening.merchantId(), opening.number())).map(existing -> {
            if (existing.isPresent() && opening.token().equals(existing.get().token())) {
                return Settlement.outcomeOf(existing.get());
            }
            boolean holderSettled = existing.map(holder -> holder.status() != PaymentStatus.PROCESSING).orElse(false);
            return opening.kind() == PaymentKind.CHARGE
                    ? new PayOutcome.RequestNoConflict(opening.orderNo(), opening.number(), holderSettled)
                    : new PayOutcome.RefundNoConflict(opening.orderNo(), opening.number(), holderSettled);
        });
    }

    /**
     * Answers a request that a layer refused after the claim, once the refused transaction rolled back: a
     * final refusal claims the token again and is stored with it, in one transaction (another copy may have
     * claimed it meanwhile, {@link TokenTakenException}: its answer is then the one); one that is not final
     * is answered without claiming anything, so the token stays free and a retry decides again.
     */
    private Uni<Step> answerRefusal(Opening opening, TokenClaim claim, PayOutcome outcome) {
        StoredResponse response = renderer.render(outcome);
        if (!outcome.isFinal()) {
            return Uni.createFrom().item(new Answer(OwnerAnswer.retryable(response)));
        }
        return db.inTransaction(tx -> tokens.claimIn(tx, opening.merchantId(), claim)
                .flatMap(owner -> tokens.complete(tx, owner, response)))
                .replaceWith((Step) new Answer(response))
                .onFailure(e -> !(e instanceof TokenTakenException))
                .transform(e -> new TemporarilyUnavailableException("database unavailable before the charge", e));
    }

    /**
     * The opening COMMIT's outcome is unknown (no answer, or an error that does not mean a rollback for
     * certain), so it may have happened, or may still happen. It is resolved for certain first
     * ({@link Database#resolve}); what the resolution reads then decides: no record of this token means
     * nothing was opened and nothing can be (the claim went with it); a record still held under this owner's
     * epoch may be charged; one taken over, or settled, answers what the rows say. Unresolved, the answer is
     * 202: reconciliation completes whatever was opened, and a retry runs a request never opened.
     */
    private Uni<Step> lookAgain(LookAgain again) {
        Opening opening = again.opening();
        return db.resolve(again.unknown(), conn -> payments.find(conn, opening.kind(), opening.merchantId(),
                opening.number()))
                .flatMap(resolved -> {
                    if (resolved.isEmpty()) {
                        LOG.warnf("the opening commit of %s is still in doubt: answered as processing", opening.number());
                        return Uni.createFrom().item((Step) Processing.inDoubt(opening));
                    }
                    Optional<Payment> ofThisRequest = resolved.get().filter(p -> opening.token().equals(p.token()));
                    if (ofThisRequest.isEmpty()) {
                        // nothing of this request's: the opening rolled back, and nothing can be charged under it
                        return Uni.createFrom().failure(
                                new TemporarilyUnavailableException("the opening transaction did not commit", null));
                    }
                    Payment payment = ofThisRequest.get();
                    Held held = new Held(payment, again.owner().epoch(), true, Optional.of(again.owner()),
                            Optional.empty(), again.sinceNanos(), lease, Duration.ZERO);
                    if (payment.id() != again.paymentId() || payment.epoch() != again.owner().epoch()
                            || payment.status() != PaymentStatus.PROCESSING) {
                        // another copy's record (this opening rolled back), taken over, or settled: its answer
                        return Uni.createFrom().item((Step) new Lost(held));
                    }
                    if (opening.kind() == PaymentKind.REFUND) {
                        // its reservation committed with it; the order moves only when the refund settles
                        return Uni.createFrom().item((Step) new Charge(held));
                    }
                    return db.bounded(orders.find(opening.merchantId(), opening.orderNo())).map(order -> order
                            .filter(o -> o.status() == OrderStatus.PAYING)
                            .<Step>map(o -> new Charge(new Held(payment, held.epoch(), true, held.ownership(),
                                    Optional.of(o), held.sinceNanos(), lease, Duration.ZERO)))
                            .orElseGet(() -> new Lost(held)));
                })
                .onFailure(e -> !(e instanceof TemporarilyUnavailableException))
                .recoverWithItem(Processing.inDoubt(opening));
    }

    /**
     * Charge: sent only while the owner still holds the payment (checked in the database unless its lease is
     * too young for anyone to have taken it over), and every answer of the channel's maps to the next step.
     */
    private Uni<Step> charge(Held held) {
        Uni<Boolean> stillHeld = held.surelyHeld() ? Uni.createFrom().item(true)
                : db.bounded(payments.held(held.payment().id(), held.epoch()));
        return stillHeld.onFailure().recoverWithItem(false).flatMap(holds -> {
            if (!holds) {
                return Uni.createFrom().item((Step) new Lost(held));
            }
            Payment p = held.payment();
            Uni<ChargeResult> sent = p.kind() == PaymentKind.CHARGE
                    ? channel.charge(p.merchantId(), p.orderNo(), p.requestNo(), p.amount(), p.currency())
                    : channel.refund(p.merchantId(), p.orderNo(), p.requestNo(), p.amount(), p.currency());
            return sent.map(word -> afterCharge(held, word));
        });
    }

    private Step afterCharge(Held held, ChargeResult word) {
        return switch (word) {
            case ChargeResult.Succeeded ok -> new Settle(held, word);
            case ChargeResult.Declined declined -> new Settle(held, word);
            case ChargeResult.Closed closed -> new Settle(held, word);
            case ChargeResult.NotAccepted refused -> held.opener() ? new Undo(held, refused.reason())
                    // refused before acceptance this time; an earlier charge of the number may still be under way
                    : new Postpone(held, word);
            // pending, or no clear answer: only the channel's later word can tell
            case ChargeResult.Pending pending -> held.opener() ? Processing.of(held) : new Postpone(held, word);
            case ChargeResult.NotFound notFound -> held.opener() ? Processing.of(held) : new Postpone(held, word);
            case ChargeResult.Unknown unknown -> held.opener() ? Processing.of(held) : new Postpone(held, word);
        };
    }

    /**
     * Query, for a payment taken over: the channel's final word settles it; a charge that never arrived is
     * sent again, the same number and amount (the channel's idempotency makes that safe even if the first is
     * still on its way: the customer asked once, and was told it is processing); past give-up-after the number
     * is closed instead, so that nothing can be charged under it once the payment is reported not completed.
     */
    private Uni<Step> query(Held held, boolean overdue) {
        Payment p = held.payment();
        Uni<ChargeResult> asked = p.kind() == PaymentKind.CHARGE ? channel.query(p.merchantId(), p.requestNo())
                : channel.queryRefund(p.merchantId(), p.requestNo());
        return asked.map(told -> {
            if (told.isFinal()) {
                return new Settle(held, told);
            }
            if (overdue) {
                return new Close(held);
            }
            if (told instanceof ChargeResult.NotFound) {
                chargesSentAgain.increment();
                return new Charge(held);
            }
            return new Postpone(held, told);
        });
    }

    private Uni<Step> close(Held held) {
        Payment p = held.payment();
        Uni<ChargeResult> closed = p.kind() == PaymentKind.CHARGE ? channel.close(p.merchantId(), p.requestNo())
                : channel.closeRefund(p.merchantId(), p.requestNo());
        return closed.map(word -> word.isFinal() ? new Settle(held, word) : new Postpone(held, word));
    }

    /**
     * Settle, through the one settlement both owners use: whoever comes second answers what the first stored.
     * A settlement that fails leaves the payment to reconciliation.
     */
    private Uni<Step> settle(Held held, ChargeResult word) {
        return settlement.settle(Settlement.Target.of(held.payment()), held.order(), word)
                .map(settled -> held.opener() ? (Step) new Answer(settled.response()) : new Settled(settled, word))
                .onFailure().recoverWithItem(e -> {
                    LOG.errorf(e, "settling %s failed after the charge; reconciliation will settle it",
                            held.payment().requestNo());
                    return held.opener() ? Processing.of(held) : new Postpone(held, word);
                });
    }

    /**
     * Undo: the channel refused the opener's charge before accepting it, so the attempt is taken back whole
     * and the token released (its fingerprint stays bound) for the client's retry: a 503. Only while the
     * opener's epoch holds: the order and the token move only when the record was deleted, and a record
     * taken over meanwhile is left to its new owner, the request answering what the rows say. If the undo
     * rolled back the record stands and the answer is a 202: reconciliation completes the payment (the channel
     * has no charge of it and is sent the same one again), never declines it. An undo whose COMMIT went
     * unanswered is resolved as an opening's is: the 503 only once the record is known gone, the owed 202 once
     * it is known to stand, and a 202 in doubt while nobody can tell (a retry then finds what happened).
     */
    private Uni<Step> undo(Held held, String reason) {
        Ownership owner = held.ownership().orElseThrow();
        Payment p = held.payment();
        return db.inTransaction(tx -> payments.deleteUnaccepted(tx, p.id(), held.epoch())
                .flatMap(deleted -> !deleted ? Uni.createFrom().item(Undone.FENCED)
                        : (p.kind() == PaymentKind.CHARGE
                                ? orders.transition(tx, held.order().orElseThrow(), OrderStatus.PAYING,
                                        OrderStatus.PENDING, UtcTime.now())
                                // a refund gives its reservation back: it never reached the channel
                                : orders.release(tx, p.merchantId(), p.orderNo(), p.amount()))
                                .flatMap(moved -> tokens.release(tx, owner))
                                .replaceWith(Undone.UNDONE)))
                .onFailure(Database.CommitUnknownException.class).recoverWithUni(unknown -> db.resolve(
                        (Database.CommitUnknownException) unknown, conn -> payments.find(conn, p.kind(), p.merchantId(),
                                p.requestNo()))
                        .map(resolved -> resolved.map(found -> found.filter(now -> now.id() == p.id()).isPresent()
                                ? Undone.ROLLED_BACK : Undone.UNDONE).orElse(Undone.IN_DOUBT)))
                .onFailure().recoverWithItem(failure -> {
                    LOG.warnf(failure, "undoing unaccepted %s failed; reconciliation will complete it", p.requestNo());
                    return Undone.ROLLED_BACK;
                })
                .map(undone -> switch (undone) {
                    case UNDONE -> throw new TemporarilyUnavailableException(reason, null);
                    case FENCED -> new Lost(held);
                    case ROLLED_BACK -> Processing.of(held);
                    case IN_DOUBT -> {
                        LOG.warnf("the undo of %s is still in doubt: answered as processing", p.requestNo());
                        yield Processing.inDoubt(p);
                    }
                });
    }

    /** What became of an undo: done, fenced off by a take-over, rolled back (the record stands), or unknown. */
    private enum Undone {
        UNDONE, FENCED, ROLLED_BACK, IN_DOUBT
    }

    /**
     * Processing: the interim 202, recorded with the token while it stays in progress, only while the owner
     * still holds the payment (best effort: the answer is the 202 either way).
     */
    private Uni<Step> processing(Processing processing) {
        StoredResponse response = renderer.render(Settlement.processing(processing.kind(), processing.orderNo(),
                processing.requestNo()));
        if (processing.held().isEmpty()) {
            return Uni.createFrom().item(new Answer(OwnerAnswer.inDoubt(response)));
        }
        Optional<Held> held = processing.held().filter(h -> h.ownership().isPresent());
        if (held.isEmpty()) {
            return Uni.createFrom().item(new Answer(response));
        }
        return db.bounded(payments.recordInterim(held.get().payment().id(), held.get().epoch(),
                held.get().ownership().get().epoch(), response, UtcTime.now()))
                .onFailure().recoverWithItem(false)
                .replaceWith(new Answer(response));
    }

    /** Postpone: reconciliation looks again after the backoff, unless it lost the payment meanwhile. */
    private Uni<Step> postpone(Held held, ChargeResult word) {
        return db.bounded(payments.postpone(held.payment().id(), held.epoch(), held.backoff()))
                .replaceWith(new Postponed(word));
    }

    /**
     * The owner lost the payment (taken over, or settled meanwhile): it answers what the rows say, the
     * settled answer, or 202 while the new owner completes it. Never "nothing happened".
     */
    private Uni<Step> lost(Held held) {
        Payment p = held.payment();
        StoredResponse processing = renderer.render(Settlement.processing(p.kind(), p.orderNo(), p.requestNo()));
        LOG.infof("%s is no longer held under epoch %d by this owner: answering what the rows say", p.requestNo(),
                held.epoch());
        return db.bounded(payments.find(p.kind(), p.merchantId(), p.requestNo()))
                .flatMap(found -> found.filter(now -> now.status() != PaymentStatus.PROCESSING)
                        .map(settlement::storedAnswer)
                        .orElseGet(() -> Uni.createFrom().item(processing)))
                .onFailure().recoverWithItem(processing)
                .map(Answer::new);
    }
}
