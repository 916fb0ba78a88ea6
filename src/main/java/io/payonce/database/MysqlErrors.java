package io.payonce.database;

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
}
