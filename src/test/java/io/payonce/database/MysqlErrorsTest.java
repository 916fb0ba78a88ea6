package io.payonce.database;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.vertx.mysqlclient.MySQLException;
import io.vertx.sqlclient.ClosedConnectionException;

/** Which errors at a COMMIT count as "nothing committed": a deadlock victim's or a certification failure's only. */
class MysqlErrorsTest {

    @Test
    void aDeadlockOrCertificationFailure_rolledTheCommitBack() {
        assertTrue(MysqlErrors.rolledBackAtCommit(
                new MySQLException("Deadlock found when trying to get lock; try restarting transaction", 1213, "40001")));
    }

    @ParameterizedTest
    @ValueSource(ints = { 1180, 1205, 1317, 1927, 4060, 1062, 1047, 2013, 0 })
    void anyOtherServerError_leavesTheCommitInDoubt(int code) {
        assertFalse(MysqlErrors.rolledBackAtCommit(new MySQLException("error " + code, code, "HY000")));
    }

    @Test
    void aLostConnection_leavesTheCommitInDoubt() {
        assertFalse(MysqlErrors.rolledBackAtCommit(ClosedConnectionException.INSTANCE));
    }
}
