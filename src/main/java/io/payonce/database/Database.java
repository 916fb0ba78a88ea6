package io.payonce.database;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import jakarta.inject.Singleton;

import io.payonce.PayOnceConfig;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.SqlClient;
import io.vertx.mutiny.sqlclient.SqlConnection;
import io.vertx.mutiny.sqlclient.Transaction;
import io.vertx.mutiny.sqlclient.Tuple;
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
 *
 * <p>Any other error the server answers a COMMIT with leaves the transaction in doubt, as a COMMIT without an
 * answer does: it may have committed ({@link MysqlErrors#rolledBackAtCommit} says which errors do not).
 */
@Singleton
public class Database {

    private static final Duration ROLLBACK_BOUND = Duration.ofSeconds(2);

    /** Runs of one statement or transaction refused with 1213 before the error is the caller's. */
    static final int DEADLOCK_ATTEMPTS = 4;

    /** How often a resolution looks whether the killed thread is gone. */
    private static final Duration THREAD_GONE_POLL = Duration.ofMillis(20);
    /** ER_NO_SUCH_THREAD: the thread to kill has ended already. */
    private static final int NO_SUCH_THREAD = 1094;

    private final Pool pool;
    private final Connections connections;
    private final Duration timeout;

    Database(Pool pool, Connections connections, PayOnceConfig config) {
        this.pool = pool;
        this.connections = connections;
        this.timeout = config.database().timeout();
    }

    /** The bound of every database call, and of a resolution of a COMMIT in doubt. */
    public Duration timeout() {
        return timeout;
    }

    /** No answer within the database timeout. What the call would have done is unknown unless it was a read. */
    public static final class NoAnswerException extends RuntimeException {
        NoAnswerException() {
            super("the database did not answer in time", null, false, false);
        }
    }

    /**
     * A COMMIT sent whose outcome is unknown: its answer never came, or the server answered it with an error
     * that does not mean a rollback for certain. The transaction may have committed or not, and may still
     * commit later (a COMMIT held up in the network reaches the server late). {@code thread} is where it ran,
     * when known, for {@link #resolve}.
     */
    public static final class CommitUnknownException extends RuntimeException {
        private final transient Optional<Connections.ServerThread> thread;

        CommitUnknownException(Throwable cause, Optional<Connections.ServerThread> thread) {
            super("commit outcome unknown", cause, false, false);
            this.thread = thread;
        }

        public Optional<Connections.ServerThread> thread() {
            return thread;
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
     * connection failed, the answer did not come in time, or the server answered with an error that may
     * have left it committed) from a failure that rolled back for certain ({@link NoAnswerException} before
     * the COMMIT, the server's error at a statement, or at the COMMIT one of
     * {@link MysqlErrors#rolledBackAtCommit}).
     *
     * <p>A transaction that ran out of time before its COMMIT is never committed: the COMMIT is not sent
     * after it. A COMMIT in doubt is resolved with {@link #resolve}.
     */
    public <T> Uni<T> inTransaction(Function<SqlClient, Uni<T>> work) {
        return Uni.createFrom().deferred(() -> attempt(work))
                .onFailure(MysqlErrors::isDeadlock).retry().atMost(DEADLOCK_ATTEMPTS - 1);
    }

    private <T> Uni<T> attempt(Function<SqlClient, Uni<T>> work) {
        AtomicReference<Stage> stage = new AtomicReference<>(Stage.WORKING);
        AtomicReference<Optional<Connections.ServerThread>> thread = new AtomicReference<>(Optional.empty());
        return pool.withConnection(conn -> {
            thread.set(connections.threadOf(conn));
            // the work waits for BEGIN's answer: sent together, a BEGIN that failed would leave the work's
            // first statements to run, and commit, each on its own
            return conn.begin().flatMap(tx -> work.apply(conn))
                    .onFailure().call(e -> rollBack(conn, e))
                    .flatMap(result -> stage.compareAndSet(Stage.WORKING, Stage.COMMITTING)
                            ? commit(conn).onFailure(e -> !MysqlErrors.rolledBackAtCommit(e))
                                    .transform(e -> new CommitUnknownException(e, thread.get()))
                                    .replaceWith(result)
                            : rollBack(conn, null).flatMap(rolledBack -> Uni.createFrom().<T>failure(new NoAnswerException())));
        })
                .ifNoItem().after(timeout).failWith(() -> stage.compareAndSet(Stage.WORKING, Stage.ABANDONED)
                        ? new NoAnswerException()
                        : new CommitUnknownException(new NoAnswerException(), thread.get()));
    }

    /**
     * Commits the connection's transaction. A COMMIT the server refused with an error that leaves it in doubt is
     * followed by a ROLLBACK, so that nothing of the transaction a server might have left open is committed by
     * the next borrower's BEGIN (which commits an open transaction); a COMMIT that went through makes it a no-op,
     * and the COMMIT stays in doubt either way. Fails as the COMMIT failed.
     */
    private static Uni<Void> commit(SqlConnection conn) {
        return conn.transaction().commit()
                .onFailure(e -> e instanceof MySQLException && !MysqlErrors.rolledBackAtCommit(e))
                .call(refused -> conn.query("ROLLBACK").execute().replaceWithVoid()
                        .ifNoItem().after(ROLLBACK_BOUND).fail().onFailure().recoverWithNull());
    }

    /**
     * Resolves a COMMIT in doubt for certain, then reads: on a connection of its own to the same server, kills
     * the committing connection's thread ({@code KILL CONNECTION}) and waits until the thread is gone from the
     * process list. A thread inside its COMMIT (or a semi-synchronous replication wait) finishes it first; an
     * idle one, whose COMMIT has not arrived yet, ends with its transaction rolled back, and a COMMIT arriving
     * later finds no connection. Either way the transaction's fate is sealed, and {@code read} on that server
     * sees it. Empty when it cannot be resolved within the database timeout: the thread is not known, the
     * server is a Galera node (a write set may still be certified and applied on the others), the connection
     * lands on another server, or the server does not answer.
     */
    public <T> Uni<Optional<T>> resolve(CommitUnknownException unknown, Function<SqlClient, Uni<T>> read) {
        Optional<Connections.ServerThread> committing = unknown.thread();
        if (committing.isEmpty() || committing.get().clustered()) {
            return Uni.createFrom().item(Optional.empty());
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        return connections.connectApart()
                .flatMap(apart -> {
                    SqlConnection conn = apart.connection();
                    Uni<Optional<T>> resolved = !apart.thread().sameServer(committing.get())
                            ? Uni.createFrom().item(Optional.empty())
                            : conn.query("KILL CONNECTION " + committing.get().thread()).execute().replaceWithVoid()
                                    .onFailure(e -> e instanceof MySQLException my && my.getErrorCode() == NO_SUCH_THREAD)
                                    .recoverWithNull()
                                    .flatMap(killed -> gone(conn, committing.get().thread(), deadline))
                                    .flatMap(gone -> gone ? read.apply(conn).map(Optional::of)
                                            : Uni.createFrom().item(Optional.<T>empty()));
                    return resolved.eventually(() -> conn.close().onFailure().recoverWithNull());
                })
                .ifNoItem().after(timeout).recoverWithItem(Optional.empty())
                .onFailure().recoverWithItem(Optional.empty());
    }

    /** Whether the thread left the process list before the deadline. */
    private static Uni<Boolean> gone(SqlConnection conn, long thread, long deadline) {
        return conn.preparedQuery("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID = ?")
                .execute(Tuple.of(thread))
                .flatMap(rows -> {
                    if (rows.iterator().next().getLong("n") == 0) {
                        return Uni.createFrom().item(true);
                    }
                    if (System.nanoTime() - deadline > 0) {
                        return Uni.createFrom().item(false);
                    }
                    return Uni.createFrom().voidItem().onItem().delayIt().by(THREAD_GONE_POLL)
                            .flatMap(v -> gone(conn, thread, deadline));
                });
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
