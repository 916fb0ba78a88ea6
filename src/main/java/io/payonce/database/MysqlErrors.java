package io.payonce.database;

import java.util.Set;

import io.vertx.mysqlclient.MySQLException;

/** How MySQL and MariaDB report the failures the layers rely on. */
public final class MysqlErrors {

    /** ER_DUP_ENTRY: a unique index refused a second row. */
    private static final int DUPLICATE_ENTRY = 1062;

    /**
     * ER_LOCK_DEADLOCK: InnoDB rolled this transaction back to break a deadlock, or Galera did because a
     * transaction committed on another node first wrote the same rows.
     */
    private static final int DEADLOCK = 1213;

    /**
     * The errors a COMMIT may be answered with that mean, for certain, that the whole transaction rolled back and
     * nothing of it can commit later: {@link #DEADLOCK} only, which at a COMMIT is InnoDB's deadlock victim or
     * Galera's certification failure (or brute-force abort), both rolled back by the server before it answers.
     *
     * <p>Every other error leaves the COMMIT in doubt, and these in particular are left out on purpose:
     * <ul>
     * <li>1180 ER_ERROR_DURING_COMMIT: an engine or the binary log failed part-way through the commit, so what
     * the binary log or another engine already holds may stand (and be replicated);</li>
     * <li>1317 ER_QUERY_INTERRUPTED, 1927 ER_CONNECTION_KILLED: the thread was killed, which during a
     * semi-synchronous replication wait happens after the transaction committed on this server;</li>
     * <li>1205 ER_LOCK_WAIT_TIMEOUT: elsewhere it rolls back the statement alone and leaves the transaction
     * open; a COMMIT that timed out waiting for its commit lock is rolled back by MariaDB's code, but no
     * documentation promises it;</li>
     * <li>any error this list does not name, such as one from a plugin or a server version not known here.</li>
     * </ul>
     * A COMMIT in doubt costs a resolution ({@link Database#resolve}); one wrongly taken for rolled back could
     * answer "nothing was charged" for a payment that stands.
     */
    private static final Set<Integer> ROLLED_BACK_AT_COMMIT = Set.of(DEADLOCK);

    private MysqlErrors() {
    }

    /** True when a unique index stopped an insert: a duplicate, not a server error. */
    public static boolean isDuplicateKey(Throwable failure) {
        return failure instanceof MySQLException e && e.getErrorCode() == DUPLICATE_ENTRY;
    }

    /** True when the server rolled this transaction back whole: a deadlock victim, or a Galera conflict. */
    public static boolean isDeadlock(Throwable failure) {
        return failure instanceof MySQLException e && e.getErrorCode() == DEADLOCK;
    }

    /**
     * True when a COMMIT that failed with {@code failure} certainly committed nothing, and nothing of its
     * transaction can commit later (see {@link #ROLLED_BACK_AT_COMMIT}); false leaves it in doubt.
     */
    public static boolean rolledBackAtCommit(Throwable failure) {
        return failure instanceof MySQLException e && ROLLED_BACK_AT_COMMIT.contains(e.getErrorCode());
    }
}
