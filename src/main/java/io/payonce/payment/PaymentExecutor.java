package io.payonce.payment;

import java.time.Duration;
import java.time.Instant;
import java.util.function.Function;

import jakarta.enterprise.context.ApplicationScoped;

import org.jboss.logging.Logger;

import io.payonce.channel.ChargeResult;
import io.payonce.channel.PaymentChannel;
import io.payonce.idempotency.StoredResponse;
import io.payonce.idempotency.TokenService;
import io.payonce.idempotency.TokenTakenException;
import io.payonce.idempotency.TokenUse;
import io.payonce.mysql.MysqlErrors;
import io.payonce.mysql.UtcTime;
import io.payonce.order.Order;
import io.payonce.order.OrderRepository;
import io.payonce.order.OrderStatus;
import io.payonce.payment.PayMetrics.Layer;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.SqlClient;
import io.vertx.mutiny.sqlclient.SqlConnection;
import io.vertx.mutiny.sqlclient.Transaction;
import io.vertx.sqlclient.ClosedConnectionException;

/**
 * Layers 2 and 3 and the charge: the payment record under its unique request number and the order's
 * move to PAYING commit together, the channel is called outside any transaction, and the outcome
 * settles payment, order and (when there is one) the token's stored answer in one transaction.
 * Every path that can charge, HTTP or not, comes through {@link #execute}.
 */
@ApplicationScoped
public class PaymentExecutor {

    private static final Logger LOG = Logger.getLogger(PaymentExecutor.class);
    private static final Duration ROLLBACK_BOUND = Duration.ofSeconds(2);

    private final Pool pool;
    private final OrderRepository orders;
    private final PaymentRepository payments;
    private final TokenService tokens;
    private final PaymentChannel channel;
    private final OutcomeRenderer renderer;
    private final PayMetrics metrics;

    PaymentExecutor(Pool pool, OrderRepository orders, PaymentRepository payments, TokenService tokens,
            PaymentChannel channel, OutcomeRenderer renderer, PayMetrics metrics) {
        this.pool = pool;
        this.orders = orders;
        this.payments = payments;
        this.tokens = tokens;
        this.channel = channel;
        this.renderer = renderer;
        this.metrics = metrics;
    }

    /** An outcome with the answer rendered for it (and stored, when the command has a token). */
    public record Executed(PayOutcome outcome, StoredResponse response) {
    }

    /** The payment record exists and the order is PAYING: the charge may be sent. */
    private record Started(long paymentId, Order order) {
    }

    /** Rolls the opening transaction back with an outcome to answer. */
    private static final class Stop extends RuntimeException {
        final PayOutcome outcome;

        Stop(PayOutcome outcome) {
            super(null, null, false, false);
            this.outcome = outcome;
        }
    }

    /** A payment attempt without a token (a job, a queue consumer): layers 2 and 3 alone guard it. */
    public Uni<Executed> execute(PayCommand cmd) {
        return execute(cmd, null);
    }

    /**
     * Executes the command; with a token, its claim (layer 1) opens the same transaction as the payment
     * record and the order's move, so the three cost one commit. Fails only with
     * {@link TokenTakenException} (the token's row exists: nothing was done),
     * {@link TemporarilyUnavailableException} (nothing irreversible happened) or
     * {@link AlreadySettledException}; once a charge was sent every failure becomes
     * {@link PayOutcome.Processing}, never a retryable error.
     */
    public Uni<Executed> execute(PayCommand cmd, TokenUse use) {
        return inTransaction(tx -> Uni.combine().all()
                // the claim and the order's read go out together (with BEGIN, see inTransaction); the
                // read takes no lock and changes nothing, so it is harmless whatever happens to the claim
                .unis(use == null ? Uni.createFrom().voidItem() : tokens.claimIn(tx, cmd.merchantId(), use),
                        orders.find(tx, cmd.merchantId(), cmd.orderNo()))
                .with((claimed, order) -> order)
                .flatMap(order -> open(tx, cmd, order)))
                // a deadlock victim was rolled back whole, so it can simply run again
                .onFailure(MysqlErrors::isDeadlock).retry().atMost(2)
                .onFailure(Stop.class).recoverWithUni(stop -> finishFirst(cmd, use, ((Stop) stop).outcome))
                .onFailure(MysqlErrors::isDuplicateKey)
                .recoverWithUni(dup -> requestNoTaken(cmd).flatMap(outcome -> finishFirst(cmd, use, outcome)))
                // the record may or may not exist: not a 503, whose retry could then find its own record;
                // the token's retry (no record) or reconciliation (record) settles it
                .onFailure(CommitUnknown.class).recoverWithUni(unknown -> {
                    LOG.warnf("the opening commit of %s went unanswered", cmd.requestNo());
                    return processing(cmd).map(executed -> (Object) executed);
                })
                .onFailure(e -> !(e instanceof TokenTakenException))
                .transform(e -> e instanceof TemporarilyUnavailableException ? e
                        : new TemporarilyUnavailableException("database unavailable before the charge", e))
                .flatMap(opened -> opened instanceof Started started
                        ? charge(cmd, use, started)
                        : Uni.createFrom().item((Executed) opened));
    }

    /**
     * Layer 2 then layer 3, after the claim, in one transaction: either the charge may be sent
     * ({@link Started}), or the request stops with an answer stored with the token ({@link Executed}). A
     * refusal of either layer rolls everything back (see {@link #finishFirst}). The order was read without
     * a lock: the conditional update alone decides, so two requests for one order cannot both move it
     * whatever they read. The UPDATE waits for the INSERT's answer: sent together, after a deadlock that
     * rolled the INSERT's transaction back MySQL would run the UPDATE on its own, in autocommit.
     */
    private Uni<Object> open(SqlClient tx, PayCommand cmd, Order order) {
        if (order == null) {
            return stopIn(tx, cmd, new PayOutcome.OrderNotFound(cmd.orderNo(), cmd.requestNo()));
        }
        if (order.amount() != cmd.amount() || (cmd.currency() != null && !cmd.currency().equals(order.currency()))) {
            return stopIn(tx, cmd, new PayOutcome.AmountMismatch(cmd.orderNo(), cmd.requestNo()));
        }
        Instant now = UtcTime.now();
        return payments.insert(tx, cmd.merchantId(), cmd.requestNo(), cmd.orderNo(), cmd.token(),
                order.amount(), order.currency(), now)
                .flatMap(paymentId -> orders.transition(tx, order, OrderStatus.PENDING, OrderStatus.PAYING, now)
                        .map(moved -> {
                            if (!moved) {
                                metrics.stopped(Layer.STATE_MACHINE);
                                throw new Stop(new PayOutcome.OrderNotPayable(cmd.orderNo(), cmd.requestNo()));
                            }
                            return new Started(paymentId, order.movedTo(OrderStatus.PAYING, now));
                        }));
    }

    /** A stop found before anything was written but the claim: its answer goes into the same transaction. */
    private Uni<Object> stopIn(SqlClient tx, PayCommand cmd, PayOutcome outcome) {
        StoredResponse response = renderer.render(outcome);
        return storeIn(tx, cmd, response).replaceWith(new Executed(outcome, response));
    }

    /**
     * Answers a request that a layer refused after the claim, once the refused transaction rolled back:
     * claims the token again and stores the answer with it, in one transaction. Another copy may have
     * claimed the token meanwhile ({@link TokenTakenException}); its answer is then the one.
     */
    private Uni<Executed> finishFirst(PayCommand cmd, TokenUse use, PayOutcome outcome) {
        StoredResponse response = renderer.render(outcome);
        Executed executed = new Executed(outcome, response);
        if (use == null) {
            return Uni.createFrom().item(executed);
        }
        return pool.withTransaction(tx -> tokens.claimIn(tx, cmd.merchantId(), use)
                .flatMap(claimed -> outcome.isFinal()
                        ? storeIn(tx, cmd, response)
                        : tokens.recordInterim(tx, cmd.merchantId(), cmd.token(), response).replaceWithVoid()))
                .replaceWith(executed);
    }

    /** A COMMIT sent whose answer never came: the transaction may have committed or not. */
    private static final class CommitUnknown extends RuntimeException {
        CommitUnknown(Throwable cause) {
            super("commit outcome unknown", cause, false, false);
        }
    }

    /**
     * Like {@code withTransaction}, but tells a failed COMMIT (outcome unknown) from a failure before it
     * (rolled back for certain), and sends BEGIN together with the work's first statements instead of
     * waiting for its answer (the datasource's pipelining limit lets several commands be in flight on
     * one connection; MySQL runs them in the order sent). The work's later statements wait for its
     * first answers, which come after BEGIN's: if BEGIN failed, the work has been cancelled by then and
     * sends nothing more, and what its first statements did (at most a token's claim and the order's
     * read) stands alone, as after a crash between claim and record, for the token's lease to recover.
     */
    private <T> Uni<T> inTransaction(Function<SqlClient, Uni<T>> work) {
        return pool.withConnection(conn -> Uni.combine().all()
                .unis(conn.begin(), Uni.createFrom().deferred(() -> work.apply(conn)))
                .with((tx, result) -> result)
                .onFailure().call(e -> rollBack(conn, e))
                .flatMap(result -> conn.transaction().commit().onFailure().transform(CommitUnknown::new)
                        .replaceWith(result)));
    }

    /**
     * Rolls back the connection's transaction, once its statements in flight have answered. A lost
     * connection needs none (the server drops its transaction), and the client's rollback would wait
     * for answers that never come: with several commands in flight when the connection is reset,
     * Vert.x 4.5 does not fail them all, and DatabaseOutageIT saw such a request never answered. The
     * bound covers any other way for a rollback to stall; the connection is closed after it either way.
     */
    private static Uni<Void> rollBack(SqlConnection conn, Throwable failure) {
        Transaction tx = conn.transaction();
        if (tx == null || failure instanceof ClosedConnectionException) {
            return Uni.createFrom().voidItem();
        }
        return tx.rollback().ifNoItem().after(ROLLBACK_BOUND).fail().onFailure().recoverWithNull();
    }

    /** The unique index refused the record: another request holds the number, or this one's own retry. */
    private Uni<PayOutcome> requestNoTaken(PayCommand cmd) {
        metrics.stopped(Layer.UNIQUE_INDEX);
        return payments.find(cmd.merchantId(), cmd.requestNo()).map(existing -> {
            if (existing != null && cmd.token() != null && cmd.token().equals(existing.token())) {
                // this token's own earlier attempt, cut short before its answer was stored
                return (PayOutcome) switch (existing.status()) {
                    case PROCESSING -> new PayOutcome.Processing(cmd.orderNo(), cmd.requestNo());
                    case SUCCEEDED -> new PayOutcome.Paid(cmd.orderNo(), cmd.requestNo(), existing.amount(),
                            existing.currency(), existing.channelTxnId(), existing.updatedAt());
                    case FAILED -> new PayOutcome.Declined(cmd.orderNo(), cmd.requestNo());
                };
            }
            return new PayOutcome.RequestNoConflict(cmd.orderNo(), cmd.requestNo());
        });
    }

    private Uni<Executed> charge(PayCommand cmd, TokenUse use, Started started) {
        Order order = started.order();
        return channel.charge(cmd.merchantId(), cmd.orderNo(), cmd.requestNo(), order.amount(), order.currency())
                .flatMap(result -> {
                    if (result instanceof ChargeResult.Succeeded ok) {
                        return settle(cmd, started, PaymentStatus.SUCCEEDED, ok.txnId(), OrderStatus.PAID,
                                new PayOutcome.Paid(cmd.orderNo(), cmd.requestNo(), order.amount(), order.currency(),
                                        ok.txnId(), UtcTime.now()));
                    }
                    if (result instanceof ChargeResult.Declined declined) {
                        return settle(cmd, started, PaymentStatus.FAILED, declined.txnId(), OrderStatus.PENDING,
                                new PayOutcome.Declined(cmd.orderNo(), cmd.requestNo()));
                    }
                    if (result instanceof ChargeResult.NotAccepted refused) {
                        return undo(cmd, started, refused.reason());
                    }
                    return processing(cmd);
                });
    }

    /** Settles payment, order and token in one statement, so no crash can leave them disagreeing. */
    private Uni<Executed> settle(PayCommand cmd, Started started, PaymentStatus paymentStatus, String txnId,
            OrderStatus orderStatus, PayOutcome outcome) {
        StoredResponse response = renderer.render(outcome);
        return settle(cmd, started.paymentId(), started.order(), paymentStatus, txnId, orderStatus, response)
                // a deadlock with a reconciler's claim rolls the settlement back whole: it can simply run again
                .onFailure(MysqlErrors::isDeadlock).retry().atMost(2)
                .replaceWith(new Executed(outcome, response))
                .onFailure(e -> !(e instanceof AlreadySettledException)).recoverWithUni(e -> {
                    LOG.errorf(e, "settling %s failed after the charge; reconciliation will settle it", cmd.requestNo());
                    return processing(cmd);
                });
    }

    /**
     * Settles a payment the channel's query has told about (reconciliation): succeeded, it is paid;
     * failed or unknown to the channel, it failed and the order is payable again. Answers null when
     * another process settled it first.
     */
    public Uni<Executed> settleReconciled(Payment payment, ChargeResult told) {
        PayCommand cmd = new PayCommand(payment.merchantId(), payment.token(), payment.orderNo(), payment.requestNo(),
                payment.amount(), payment.currency());
        boolean paid = told instanceof ChargeResult.Succeeded;
        String txnId = paid ? ((ChargeResult.Succeeded) told).txnId()
                : told instanceof ChargeResult.Declined declined ? declined.txnId() : null;
        PayOutcome outcome = paid
                ? new PayOutcome.Paid(cmd.orderNo(), cmd.requestNo(), cmd.amount(), cmd.currency(), txnId, UtcTime.now())
                : new PayOutcome.Declined(cmd.orderNo(), cmd.requestNo());
        StoredResponse response = renderer.render(outcome);
        // the order is read without a lock: the settlement's conditional update checks its version
        return orders.find(cmd.merchantId(), cmd.orderNo())
                .flatMap(order -> settle(cmd, payment.id(), order,
                        paid ? PaymentStatus.SUCCEEDED : PaymentStatus.FAILED, txnId,
                        paid ? OrderStatus.PAID : OrderStatus.PENDING, response))
                .replaceWith(new Executed(outcome, response))
                .onFailure(AlreadySettledException.class).recoverWithNull();
    }

    /**
     * One settlement statement; when it changes nothing, fails with {@link AlreadySettledException} if
     * the payment was settled by another process, or {@link IllegalStateException} if its order left
     * PAYING under it (nothing was written either way).
     */
    private Uni<Void> settle(PayCommand cmd, long paymentId, Order order, PaymentStatus paymentStatus,
            String txnId, OrderStatus orderStatus, StoredResponse response) {
        return payments.settle(paymentId, paymentStatus, txnId, order, orderStatus, cmd.token(), response,
                UtcTime.now())
                .flatMap(settled -> settled ? Uni.createFrom().voidItem()
                        : payments.status(paymentId).<Void>map(status -> {
                            if (status != PaymentStatus.PROCESSING) {
                                throw new AlreadySettledException();
                            }
                            throw new IllegalStateException("order " + cmd.orderNo() + " left PAYING under its payment");
                        }));
    }

    /**
     * The channel refused before accepting: nothing was charged, so the attempt is taken back whole, and
     * the token released (its fingerprint stays bound) for the client's retry.
     */
    private Uni<Executed> undo(PayCommand cmd, Started started, String reason) {
        Instant now = UtcTime.now();
        return pool.withTransaction(tx -> payments.deleteUnaccepted(tx, started.paymentId())
                .flatMap(deleted -> orders.transition(tx, started.order(), OrderStatus.PAYING, OrderStatus.PENDING, now))
                .flatMap(moved -> cmd.token() == null ? Uni.createFrom().item(moved)
                        : tokens.release(tx, cmd.merchantId(), cmd.token())))
                .onItemOrFailure().transform((moved, failure) -> {
                    if (failure != null) {
                        LOG.warnf(failure, "undoing unaccepted %s failed; reconciliation will settle it", reason);
                    }
                    throw new TemporarilyUnavailableException(reason, failure);
                });
    }

    private Uni<Executed> processing(PayCommand cmd) {
        PayOutcome outcome = new PayOutcome.Processing(cmd.orderNo(), cmd.requestNo());
        StoredResponse response = renderer.render(outcome);
        if (cmd.token() == null) {
            return Uni.createFrom().item(new Executed(outcome, response));
        }
        return tokens.recordInterim(pool, cmd.merchantId(), cmd.token(), response)
                .onFailure().recoverWithItem(false)
                .replaceWith(new Executed(outcome, response));
    }

    private Uni<Void> storeIn(SqlClient client, PayCommand cmd, StoredResponse response) {
        if (cmd.token() == null) {
            return Uni.createFrom().voidItem();
        }
        return tokens.complete(client, cmd.merchantId(), cmd.token(), response).replaceWithVoid();
    }
}
