package io.payonce.database;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import jakarta.inject.Inject;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import io.payonce.support.BehindMysqlProxy;
import io.payonce.support.MysqlProxy;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.SqlClient;

/**
 * A COMMIT the server answered with an error may have committed: the server commits, and the service is told an
 * error instead of the OK ({@link MysqlProxy#forgeNextCommitAnswer}), as it is when a commit fails part-way
 * (after the binary log, or in one engine of several) or a semi-synchronous replication wait is cut short
 * after the transaction committed. Such a COMMIT is in doubt, never "nothing committed".
 */
@QuarkusTest
@TestProfile(BehindMysqlProxy.class)
class CommitErrorTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final String TABLE = "commit_error_test_rows";

    @Inject
    Database db;

    @Inject
    Pool pool;

    @BeforeEach
    void table() {
        pool.query("CREATE TABLE IF NOT EXISTS " + TABLE + " (id INT PRIMARY KEY)").execute().await().atMost(TIMEOUT);
        pool.query("DELETE FROM " + TABLE).execute().await().atMost(TIMEOUT);
    }

    @AfterEach
    void dropTable() {
        BehindMysqlProxy.proxy().disarm();
        pool.query("DROP TABLE IF EXISTS " + TABLE).execute().await().atMost(TIMEOUT);
    }

    @ParameterizedTest(name = "{0} {2}")
    @CsvSource(delimiter = '|', value = {
            "1180 | HY000 | Got error 1 \"Operation not permitted\" during COMMIT",
            "1317 | 70100 | Query execution was interrupted",
            "1927 | 70100 | Connection was killed",
            "1205 | HY000 | Lock wait timeout exceeded; try restarting transaction" })
    void commitAnsweredWithAnErrorThatDoesNotMeanARollback_isInDoubt_andResolvesAsCommitted(int code, String sqlState,
            String message) {
        // given: the next COMMIT reaches the server, which commits it, and its client is told the error instead
        MysqlProxy.Forgery forgery = BehindMysqlProxy.proxy().forgeNextCommitAnswer(code, sqlState, message);

        // when: a transaction inserts a row and commits
        Throwable failure = failureOf(db.inTransaction(tx -> tx.query("INSERT INTO " + TABLE + " VALUES (1)").execute()));

        // then: the row committed, and the service holds the COMMIT in doubt until it resolves it as committed
        String serverAnswer = forgery.awaitServerAnswer(TIMEOUT);
        assertAll("failed with " + failure + "; lost track: " + BehindMysqlProxy.proxy().lostTrack(),
                () -> assertEquals("OK", serverAnswer, "the server committed"),
                () -> assertEquals(1L, rows(pool).await().atMost(TIMEOUT), "the row stands"),
                () -> assertInstanceOf(Database.CommitUnknownException.class, failure, "in doubt, not rolled back"),
                () -> assertEquals(Optional.of(1L), db.resolve((Database.CommitUnknownException) failure,
                        CommitErrorTest::rows).await().atMost(TIMEOUT), "resolved: committed"),
                () -> assertEquals(List.of(), BehindMysqlProxy.proxy().lostTrack()));
    }

    private static Uni<Long> rows(SqlClient client) {
        return client.query("SELECT COUNT(*) AS n FROM " + TABLE).execute()
                .map(rows -> rows.iterator().next().getLong("n"));
    }

    /** What {@code call} failed with, or null if it succeeded. */
    private static Throwable failureOf(Uni<?> call) {
        return call.map(ignored -> (Throwable) null).onFailure().recoverWithItem(e -> e).await().atMost(TIMEOUT);
    }
}
