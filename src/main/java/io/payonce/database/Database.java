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
import io.vertx.mysqlclient.MySQLException;
import io.vertx.sqlclient.ClosedConnectionException;

/**
 * Bounds on every database call, and the retry of a statement or transaction rolled back as a deadlock
 * victim. The reactive client waits for an answer as long as the connection stays open, so a database
 * that stops answering without closing it (a partition, a failover leaving half-open sockets) would hold
 * a request, a waiting duplicate or a reconciliation run for ever.
 *
 * <p>Error 1213 means the server rolled the whole transaction back: InnoDB chose it as a deadlock victim,
 * or Galera refused it, at any statement or at its COMMIT, because a transaction committed first on
 * another node wrote the same rows (a certification conflict, or a brute-force abort by the replicated
 * writes). Nothing of it stands, so it runs again from its first statement, where the row the other node
 * wrote now answers (a duplicate key, a conditional update that matches nothing).
 */
@Singleton
public class Database {

    private static final Duration ROLLBACK_BOUND = Duration.ofSeconds(2);

    /** Runs of one statement or transaction refused with 1213 before the error is the caller's. */
    static final int DEADLOCK_ATTEMPTS = 4;

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

    /**
     * The call (one statement, or reads and writes each in autocommit), run again when refused with 1213,
     * failing with {@link NoAnswerException} when it has no answer within the timeout.
     */
    public <T> Uni<T> bounded(Uni<T> call) {
        return call.onFailure(MysqlErrors::isDeadlock).retry().atMost(DEADLOCK_ATTEMPTS - 1)
                .ifNoItem().after(timeout).failWith(NoAnswerException::new);
    }

    private enum Stage {
        WORKING, COMMITTING, ABANDONED
    }

    /**
     * Runs {@code work} in a transaction within the database timeout, whole again when the server refuses
     * it with 1213, telling a COMMIT whose outcome is unknown ({@link CommitUnknownException}: the
     * connection failed, or the answer did not come in time) from a failure that rolled back for certain
     * ({@link NoAnswerException} before the COMMIT, or the server's error, at a statement or at the COMMIT:
     * a COMMIT the server answered with an error committed nothing).
     *
     * <p>BEGIN goes out together with the work's first statements instead of waiting for its answer (the
     * datasource's pipelining limit lets several commands be in flight on one connection; MySQL runs them
     * in the order sent). The work's later statements wait for its first answers, which come after BEGIN's:
     * if BEGIN failed, the work has been cancelled by then and sends nothing more, and what its first
     * statements did stands alone, as after a crash, for the leases to recover. A transaction that ran out
     * of time before its COMMIT is never committed: the COMMIT is not sent after it.
     */
    public <T> Uni<T> inTransaction(Function<SqlClient, Uni<T>> work) {
        return Uni.createFrom().deferred(() -> attempt(work))
                .onFailure(MysqlErrors::isDeadlock).retry().atMost(DEADLOCK_ATTEMPTS - 1);
    }

    private <T> Uni<T> attempt(Function<SqlClient, Uni<T>> work) {
        AtomicReference<Stage> stage = new AtomicReference<>(Stage.WORKING);
        return pool.withConnection(conn -> Uni.combine().all()
                .unis(conn.begin(), Uni.createFrom().deferred(() -> work.apply(conn)))
                .with((tx, result) -> result)
                .onFailure().call(e -> rollBack(conn, e))
                .flatMap(result -> stage.compareAndSet(Stage.WORKING, Stage.COMMITTING)
                        ? conn.transaction().commit()
                                .onFailure(e -> !(e instanceof MySQLException)).transform(CommitUnknownException::new)
                                .replaceWith(result)
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
