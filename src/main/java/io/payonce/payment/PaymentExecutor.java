package io.payonce.payment;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.PayOnceConfig;
import io.payonce.channel.ChargeResult;
import io.payonce.channel.PaymentChannel;
import io.payonce.database.Database;
import io.payonce.database.MysqlErrors;
import io.payonce.database.UtcTime;
import io.payonce.idempotency.StoredResponse;
import io.payonce.idempotency.TokenClaim;
import io.payonce.idempotency.TokenService;
import io.payonce.idempotency.TokenTakenException;
import io.payonce.order.Order;
import io.payonce.order.OrderRepository;
import io.payonce.order.OrderStatus;
import io.payonce.payment.PayMetrics.Layer;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.SqlClient;
import org.jboss.logging.Logger;

/**
 * A payment's phases, each returning the next {@link Step}: open (the token's claim, layer 2's record
 * and layer 3's move to PAYING in one transaction), charge (the channel, outside any transaction),
 * then settle on the channel's final word, undo a charge the channel refused before accepting it, or
 * answer "processing" when nobody can tell yet. Every path that can charge, HTTP or not, comes
 * through {@link #execute}. The class is longer than the others on purpose: a payment's phases and the
 * steps between them read top to bottom in one place, so every outcome of every phase can be checked
 * against the next.
 */
@ApplicationScoped
public class PaymentExecutor {

    private static final Logger LOG = Logger.getLogger(PaymentExecutor.class);

    private final Database db;
    private final Pool pool;
    private final OrderRepository orders;
    private final PaymentRepository payments;
    private final TokenService tokens;
    private final PaymentChannel channel;
    private final Settlement settlement;
    private final OutcomeRenderer renderer;
    private final PayMetrics metrics;
    private final Duration lease;

    PaymentExecutor(Database db, Pool pool, OrderRepository orders, PaymentRepository payments, TokenService tokens,
            PaymentChannel channel, Settlement settlement, OutcomeRenderer renderer, PayMetrics metrics,
            PayOnceConfig config) {
        this.db = db;
        this.pool = pool;
        this.orders = orders;
        this.payments = payments;
        this.tokens = tokens;
        this.channel = channel;
        this.settlement = settlement;
        this.renderer = renderer;
        this.metrics = metrics;
        this.lease = config.idempotency().lease();
    }

    /** Where a payment goes next: each phase returns one of these, and {@link Answer} ends the request. */
    private sealed interface Step {
        /** The payment record exists and the order is PAYING: the charge may be sent. */
        record Charge(long paymentId, Order order) implements Step {
        }

        /** The channel gave its final word (charged, declined or closed): settle on it. */
        record Settle(Charge charge, ChargeResult word) implements Step {
        }

        /** The channel refused before accepting: nothing was charged, so the attempt is taken back. */
        record Undo(Charge charge, String reason) implements Step {
        }

        /** Nobody can tell yet whether the channel charged: answer 202; reconciliation settles it. */
        record Processing() implements Step {
        }

        /** A layer refused the request after the claim, and the opening rolled back: store that answer. */
        record Refused(PayOutcome outcome) implements Step {
        }

        /** The opening COMMIT went unanswered: look on a fresh connection whether it happened. */
        record LookAgain() implements Step {
        }

        /** The request's answer. */
        record Answer(StoredResponse response) implements Step {
        }
    }

    /** A payment attempt without a token (a job, a queue consumer): layers 2 and 3 alone guard it. */
    public Uni<StoredResponse> execute(PayCommand cmd) {
        return execute(cmd, Optional.empty());
    }

    /**
     * Executes the command and answers; with a token, its claim (layer 1) opens the same transaction as
     * the payment record and the order's move, so the three cost one commit. Fails only with
     * {@link TokenTakenException} (the token's row exists: nothing was done) or
     * {@link TemporarilyUnavailableException} (nothing irreversible happened); once a charge was sent every
     * failure becomes the 202 of {@link Step.Processing}, never a retryable error.
     */
    public Uni<StoredResponse> execute(PayCommand cmd, Optional<TokenClaim> claim) {
        return open(cmd, claim).flatMap(step -> proceed(cmd, claim, step));
    }

    /** Runs the phases from {@code step} on, until one answers. */
    private Uni<StoredResponse> proceed(PayCommand cmd, Optional<TokenClaim> claim, Step step) {
        if (step instanceof Step.Answer answer) {
            return Uni.createFrom().item(answer.response());
        }
        return phase(cmd, claim, step).flatMap(next -> proceed(cmd, claim, next));
    }

    private Uni<Step> phase(PayCommand cmd, Optional<TokenClaim> claim, Step step) {
        if (step instanceof Step.Charge charge) {
            return charge(cmd, charge);
        }
        if (step instanceof Step.Settle settle) {
            return settle(cmd, settle);
        }
        if (step instanceof Step.Undo undo) {
            return undo(cmd, undo);
        }
        if (step instanceof Step.Processing) {
            return processing(cmd);
        }
        if (step instanceof Step.Refused refused) {
            return answerRefusal(cmd, claim, refused.outcome());
        }
        if (step instanceof Step.LookAgain) {
            return lookAgain(cmd);
        }
        throw new IllegalStateException("no phase for " + step);
    }

    /**
     * Open: the claim, layer 2 then layer 3, in one transaction. Leads to {@link Step.Charge}, to an
     * {@link Step.Answer} stored in the same transaction (unknown order, wrong amount), to
     * {@link Step.Refused} once a layer's refusal rolled everything back, or to {@link Step.LookAgain}.
     * The claim and the order's read go out together (with BEGIN, see {@link Database#inTransaction}); the
     * read takes no lock and changes nothing, so it is harmless whatever happens to the claim.
     */
    private Uni<Step> open(PayCommand cmd, Optional<TokenClaim> claim) {
        return db.inTransaction(tx -> Uni.combine().all()
                .unis(claim.isEmpty() ? Uni.createFrom().voidItem() : tokens.claimIn(tx, cmd.merchantId(), claim.get()),
                        orders.find(tx, cmd.merchantId(), cmd.orderNo()))
                .with((claimed, order) -> order)
                .flatMap(order -> openWith(tx, cmd, order)))
                .onFailure(Stop.class).recoverWithItem(stop -> new Step.Refused(((Stop) stop).outcome))
                .onFailure(MysqlErrors::isDuplicateKey)
                .recoverWithUni(dup -> requestNoTaken(cmd).map(outcome -> (Step) new Step.Refused(outcome)))
                .onFailure(Database.CommitUnknownException.class).recoverWithItem(unknown -> {
                    LOG.warnf("the opening commit of %s went unanswered", cmd.requestNo());
                    return new Step.LookAgain();
                })
                .onFailure(e -> !(e instanceof TokenTakenException))
                .transform(e -> new TemporarilyUnavailableException("database unavailable before the charge", e));
    }

    /**
     * Layer 2 then layer 3 after the claim. The order was read without a lock: the conditional update alone
     * decides, so two requests for one order cannot both move it whatever they read. The UPDATE waits for
     * the INSERT's answer: sent together, after a deadlock that rolled the INSERT's transaction back MySQL
     * would run the UPDATE on its own, in autocommit.
     */
    private Uni<Step> openWith(SqlClient tx, PayCommand cmd, Optional<Order> found) {
        if (found.isEmpty()) {
            return answerIn(tx, cmd, new PayOutcome.OrderNotFound(cmd.orderNo(), cmd.requestNo()));
        }
        Order order = found.get();
        if (order.amount() != cmd.amount() || (cmd.currency() != null && !cmd.currency().equals(order.currency()))) {
            return answerIn(tx, cmd, new PayOutcome.AmountMismatch(cmd.orderNo(), cmd.requestNo()));
        }
        return payments.insert(tx, cmd.merchantId(), cmd.requestNo(), cmd.orderNo(), cmd.token(),
                order.amount(), order.currency(), lease)
                .flatMap(paymentId -> orders.transition(tx, order, OrderStatus.PENDING, OrderStatus.PAYING, UtcTime.now())
                        .map(moved -> {
                            if (!moved) {
                                metrics.stopped(Layer.STATE_MACHINE);
                                throw new Stop(new PayOutcome.OrderNotPayable(cmd.orderNo(), cmd.requestNo()));
                            }
                            return new Step.Charge(paymentId, order.movedTo(OrderStatus.PAYING, UtcTime.now()));
                        }));
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
    private Uni<Step> answerIn(SqlClient tx, PayCommand cmd, PayOutcome outcome) {
        StoredResponse response = renderer.render(outcome);
        return storeIn(tx, cmd, response).replaceWith(new Step.Answer(response));
    }

    /** The unique index refused the record: another request holds the number, or this token's own earlier one. */
    private Uni<PayOutcome> requestNoTaken(PayCommand cmd) {
        metrics.stopped(Layer.UNIQUE_INDEX);
        return db.bounded(payments.find(cmd.merchantId(), cmd.requestNo())).map(existing -> existing
                // this token's own earlier attempt, cut short before its answer was stored
                .filter(payment -> cmd.token() != null && cmd.token().equals(payment.token()))
                .map(Settlement::outcomeOf)
                .orElseGet(() -> new PayOutcome.RequestNoConflict(cmd.orderNo(), cmd.requestNo())));
    }

    /**
     * Answers a request that a layer refused after the claim, once the refused transaction rolled back:
     * claims the token again and stores the answer with it, in one transaction. Another copy may have
     * claimed the token meanwhile ({@link TokenTakenException}); its answer is then the one.
     */
    private Uni<Step> answerRefusal(PayCommand cmd, Optional<TokenClaim> claim, PayOutcome outcome) {
        StoredResponse response = renderer.render(outcome);
        if (claim.isEmpty()) {
            return Uni.createFrom().item(new Step.Answer(response));
        }
        return db.inTransaction(tx -> tokens.claimIn(tx, cmd.merchantId(), claim.get())
                .flatMap(claimed -> outcome.isFinal()
                        ? storeIn(tx, cmd, response)
                        : tokens.recordInterim(tx, cmd.merchantId(), cmd.token(), response).replaceWithVoid()))
                .replaceWith((Step) new Step.Answer(response))
                .onFailure(e -> !(e instanceof TokenTakenException))
                .transform(e -> new TemporarilyUnavailableException("database unavailable before the charge", e));
    }

    /**
     * The opening COMMIT went unanswered, so it may or may not have happened. The owner still holds the
     * payment's lease and looks on a fresh connection: its own record there means the opening committed
     * and the charge may go; no record means it did not (the token's claim went with it), and nothing
     * happened. A database still silent leaves it to reconciliation, which completes what was opened.
     */
    private Uni<Step> lookAgain(PayCommand cmd) {
        return db.bounded(payments.find(cmd.merchantId(), cmd.requestNo())).flatMap(found -> {
            Payment payment = found.filter(p -> Objects.equals(p.token(), cmd.token())).orElseThrow(
                    () -> new TemporarilyUnavailableException("the opening transaction did not commit", null));
            if (payment.status() != PaymentStatus.PROCESSING) {
                return settlement.storedAnswer(payment).map(response -> (Step) new Step.Answer(response));
            }
            return db.bounded(orders.find(cmd.merchantId(), cmd.orderNo())).map(order -> order
                    .filter(o -> o.status() == OrderStatus.PAYING)
                    .<Step>map(o -> new Step.Charge(payment.id(), o))
                    .orElseGet(Step.Processing::new));
        }).onFailure(e -> !(e instanceof TemporarilyUnavailableException)).recoverWithItem(new Step.Processing());
    }

    /** Charge: every answer of the channel's maps to the next step. */
    private Uni<Step> charge(PayCommand cmd, Step.Charge charge) {
        Order order = charge.order();
        return channel.charge(cmd.merchantId(), cmd.orderNo(), cmd.requestNo(), order.amount(), order.currency())
                .map(word -> {
                    if (word.isFinal()) {
                        return new Step.Settle(charge, word);
                    }
                    if (word instanceof ChargeResult.NotAccepted refused) {
                        return new Step.Undo(charge, refused.reason());
                    }
                    // pending, or no clear answer: only the channel's later word can tell
                    return new Step.Processing();
                });
    }

    /**
     * Settle, through the one settlement reconciliation uses too: if reconciliation settled first, its
     * stored answer is this request's answer. A settlement that fails leaves the payment to reconciliation.
     */
    private Uni<Step> settle(PayCommand cmd, Step.Settle settle) {
        Step.Charge charge = settle.charge();
        Settlement.Target target = new Settlement.Target(charge.paymentId(), cmd.merchantId(), cmd.token(),
                cmd.orderNo(), cmd.requestNo(), charge.order().amount(), charge.order().currency());
        return settlement.settle(target, Optional.of(charge.order()), settle.word())
                .map(settled -> (Step) new Step.Answer(settled.response()))
                .onFailure().recoverWithItem(e -> {
                    LOG.errorf(e, "settling %s failed after the charge; reconciliation will settle it", cmd.requestNo());
                    return new Step.Processing();
                });
    }

    /**
     * Undo: the channel refused before accepting, so the attempt is taken back whole and the token
     * released (its fingerprint stays bound) for the client's retry: a 503. If the undo fails, the record
     * stands and the answer is a 202: reconciliation completes the payment (the channel has no charge of
     * it and is sent the same one again), never declines it.
     */
    private Uni<Step> undo(PayCommand cmd, Step.Undo undo) {
        Step.Charge charge = undo.charge();
        return db.inTransaction(tx -> payments.deleteUnaccepted(tx, charge.paymentId())
                .flatMap(deleted -> orders.transition(tx, charge.order(), OrderStatus.PAYING, OrderStatus.PENDING,
                        UtcTime.now()))
                .flatMap(moved -> cmd.token() == null ? Uni.createFrom().item(moved)
                        : tokens.release(tx, cmd.merchantId(), cmd.token())))
                .onItemOrFailure().transform((released, failure) -> {
                    if (failure != null) {
                        LOG.warnf(failure, "undoing unaccepted %s failed; reconciliation will complete it", cmd.requestNo());
                        return new Step.Processing();
                    }
                    throw new TemporarilyUnavailableException(undo.reason(), null);
                });
    }

    /** Processing: the interim 202, recorded with the token while it stays in progress (best effort). */
    private Uni<Step> processing(PayCommand cmd) {
        StoredResponse response = renderer.render(new PayOutcome.Processing(cmd.orderNo(), cmd.requestNo()));
        if (cmd.token() == null) {
            return Uni.createFrom().item(new Step.Answer(response));
        }
        return db.bounded(tokens.recordInterim(pool, cmd.merchantId(), cmd.token(), response))
                .onFailure().recoverWithItem(false)
                .replaceWith(new Step.Answer(response));
    }

    private Uni<Void> storeIn(SqlClient client, PayCommand cmd, StoredResponse response) {
        if (cmd.token() == null) {
            return Uni.createFrom().voidItem();
        }
        return tokens.complete(client, cmd.merchantId(), cmd.token(), response).replaceWithVoid();
    }
}
