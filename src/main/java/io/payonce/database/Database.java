package io.payonce.database;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import jakarta.inject.Singleton;

import io.payonce.PayOnceConfig;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.SqlClient;
import io.vertx.mutiny.sqlclient.SqlConnection;
import io.vertx.mutiny.sqlclient.Transaction;
import io.vertx.sqlclient.ClosedConnectionException;

/**
 * Bounds on every database call. The reactive client waits for an answer as long as the connection stays
 * open, so a database that stops answering without closing it (a partition, a failover leaving half-open
 * sockets) would hold a request, a waiting duplicate or a reconciliation run for ever.
 */
@Singleton
public class Database {

    private static final Duration ROLLBACK_BOUND = Duration.ofSeconds(2);

    private final Pool pool;
    private final Duration timeout;

    Database(Pool pool, PayOnceConfig config) {
        this.pool = pool;
        this.timeout = config.database().timeout();
    }

    /** No answer within the database timeout. What the call would have done is unknown unless it was a read. */
    public static final class NoAnswerException extends RuntimeException {
        NoAnswerException() {
            super("the database did not answer in time", null, false, false);
        }
    }

    /** A COMMIT sent whose answer never came: the transaction may have committed or not. */
    public static final class CommitUnknownException extends RuntimeException {
        CommitUnknownException(Throwable cause) {
            super("commit outcome unknown", cause, false, false);
        }
    }

    /** The call, failing with {@link NoAnswerException} when it has no answer within the timeout. */
    public <T> Uni<T> bounded(Uni<T> call) {
        return call.ifNoItem().after(timeout).failWith(NoAnswerException::new);
    }

    private enum Stage {
        WORKING, COMMITTING, ABANDONED
    }

    /**
     * Runs {@code work} in a transaction within the database timeout, telling a COMMIT whose outcome is
     * unknown ({@link CommitUnknownException}: it failed, or its answer did not come in time) from a
     * failure before it, which rolled back for certain ({@link NoAnswerException} or the statement's own
     * error). BEGIN goes out together with the work's first statements instead of waiting for its answer
     * (the datasource's pipelining limit lets several commands be in flight on one connection; MySQL runs
     * them in the order sent). The work's later statements wait for its first answers, which come after
     * BEGIN's: if BEGIN failed, the work has been cancelled by then and sends nothing more, and what its
     * first statements did stands alone, as after a crash, for the leases to recover. A transaction that
     * ran out of time before its COMMIT is never committed: the COMMIT is not sent after it.
     */
    public <T> Uni<T> inTransaction(Function<SqlClient, Uni<T>> work) {
        AtomicReference<Stage> stage = new AtomicReference<>(Stage.WORKING);
        return pool.withConnection(conn -> Uni.combine().all()
                .unis(conn.begin(), Uni.createFrom().deferred(() -> work.apply(conn)))
                .with((tx, result) -> result)
                .onFailure().call(e -> rollBack(conn, e))
                .flatMap(result -> stage.compareAndSet(Stage.WORKING, Stage.COMMITTING)
                        ? conn.transaction().commit().onFailure().transform(CommitUnknownException::new).replaceWith(result)
                        : rollBack(conn, null).flatMap(rolledBack -> Uni.createFrom().<T>failure(new NoAnswerException()))))
                .ifNoItem().after(timeout).failWith(() -> stage.compareAndSet(Stage.WORKING, Stage.ABANDONED)
                        ? new NoAnswerException()
                        : new CommitUnknownException(new NoAnswerException()));
    }

    /**
     * Rolls back the connection's transaction, once its statements in flight have answered. A lost
     * connection needs none (the server drops its transaction), and the client's rollback would wait
     * for answers that never come: with several commands in flight when the connection is reset,
     * Vert.x 4.5 does not fail them all. The bound covers any other way for a rollback to stall; the
     * connection is closed after it either way.
     */
    private static Uni<Void> rollBack(SqlConnection conn, Throwable failure) {
        Transaction tx = conn.transaction();
        if (tx == null || failure instanceof ClosedConnectionException) {
            return Uni.createFrom().voidItem();
        }
        return tx.rollback().ifNoItem().after(ROLLBACK_BOUND).fail().onFailure().recoverWithNull();
    }
}
