package io.payonce.database;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.inject.Inject;

import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.quarkus.test.junit.QuarkusTest;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.SqlClient;

/**
 * The database's own rules, on a real server: a transaction InnoDB rolls back as a deadlock victim runs
 * again whole, every pooled connection asks a Galera cluster to let its reads wait for what the cluster
 * committed, and a COMMIT in doubt is resolved for certain by killing its thread on its server.
 */
@QuarkusTest
class DatabaseTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final String TABLE = "database_test_rows";

    @Inject
    Database db;

    @Inject
    Pool pool;

    @Inject
    Connections connections;

    @BeforeEach
    void rows() {
        pool.query("CREATE TABLE IF NOT EXISTS " + TABLE + " (id INT PRIMARY KEY, v INT NOT NULL)").execute()
                .await().atMost(TIMEOUT);
        pool.query("DELETE FROM " + TABLE).execute().await().atMost(TIMEOUT);
        // rows 1 and 2 are the ones the two transactions cross on; 3 to 12 make the other one the heavier
        StringBuilder values = new StringBuilder("(1, 0), (2, 0)");
        for (int id = 3; id <= 12; id++) {
            values.append(", (").append(id).append(", 0)");
        }
        pool.query("INSERT INTO " + TABLE + " VALUES " + values).execute().await().atMost(TIMEOUT);
    }

    @AfterEach
    void dropRows() {
        pool.query("DROP TABLE IF EXISTS " + TABLE).execute().await().atMost(TIMEOUT);
    }

    @Test
    void aDeadlockVictim_runsAgainWhole() throws Exception {
        AtomicInteger attempts = new AtomicInteger();
        CountDownLatch firstRowLocked = new CountDownLatch(1);
        try (Connection other = DriverManager.getConnection(
                ConfigProvider.getConfig().getValue("quarkus.datasource.jdbc.url", String.class), "root", "")) {
            other.setAutoCommit(false);
            try (Statement st = other.createStatement()) {
                // the other transaction holds row 2 and ten more: InnoDB rolls back the lighter one, ours
                st.executeUpdate("UPDATE " + TABLE + " SET v = v + 1 WHERE id >= 2");
            }
            CompletableFuture<Integer> ours = db.inTransaction(tx -> {
                int attempt = attempts.incrementAndGet();
                return add(tx, 1).invoke(firstRowLocked::countDown)
                        // the first attempt gives the other transaction time to queue for row 1
                        .onItem().delayIt().by(Duration.ofMillis(attempt == 1 ? 500 : 1))
                        .flatMap(one -> add(tx, 2)).replaceWith(attempt);
            }).subscribeAsCompletionStage();
            firstRowLocked.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            try (Statement st = other.createStatement()) {
                // waits for our row 1 until our row-2 update closes the cycle and ours is rolled back
                st.executeUpdate("UPDATE " + TABLE + " SET v = v + 1 WHERE id = 1");
            }
            other.commit();

            assertEquals(2, ours.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS), "ours ran a second time, whole");
        }
        assertEquals(List.of(2, 2, 1), values(1, 2, 3), "both transactions committed, ours once");
    }

    @Test
    void everyPooledConnection_waitsForTheClusterBeforeReading() {
        List<Integer> settings = Uni.join().all(List.of(syncWait(), syncWait(), syncWait(), syncWait()))
                .andFailFast().await().atMost(TIMEOUT);

        assertEquals(List.of(1, 1, 1, 1), settings);
    }

    /** wsrep_sync_wait of one connection, held while three others are asked, so that four are opened. */
    private Uni<Integer> syncWait() {
        return pool.withConnection(conn -> conn.query("SELECT @@SESSION.wsrep_sync_wait AS w").execute()
                .onItem().delayIt().by(Duration.ofMillis(200))
                .map(rows -> rows.iterator().next().getInteger("w")));
    }

    @Test
    void everyPooledConnection_knowsItsServerThread() {
        List<Boolean> known = Uni.join().all(List.of(threadKnown(), threadKnown(), threadKnown())).andFailFast()
                .await().atMost(TIMEOUT);

        assertEquals(List.of(true, true, true), known);
    }

    @Test
    void aCommitInDoubtNotArrivedYet_isResolvedAsNeverCommitted() throws Exception {
        try (Connection committing = jdbc()) {
            committing.setAutoCommit(false);
            try (Statement st = committing.createStatement()) {
                // its COMMIT is still on its way when the answer is given up on
                st.executeUpdate("INSERT INTO " + TABLE + " VALUES (100, 1)");
            }
            Database.CommitUnknownException unknown = inDoubt(committing, false);

            Optional<Long> rows = db.resolve(unknown, this::rowsOf100).await().atMost(TIMEOUT);

            assertEquals(Optional.of(0L), rows, "killed before its COMMIT: rolled back, and read so for certain");
            assertThrows(SQLException.class, committing::commit, "the COMMIT arriving later finds no connection");
        }
        assertEquals(0L, rowsOf100(pool).await().atMost(TIMEOUT));
    }

    @Test
    void aCommitInDoubtThatHappened_isResolvedAsCommitted() throws Exception {
        try (Connection committing = jdbc()) {
            committing.setAutoCommit(false);
            try (Statement st = committing.createStatement()) {
                st.executeUpdate("INSERT INTO " + TABLE + " VALUES (100, 1)");
            }
            committing.commit();
            Database.CommitUnknownException unknown = inDoubt(committing, false);

            assertEquals(Optional.of(1L), db.resolve(unknown, this::rowsOf100).await().atMost(TIMEOUT));
        }
    }

    @Test
    void aCommitInDoubtOnAGaleraNode_staysInDoubt() throws Exception {
        try (Connection committing = jdbc()) {
            Database.CommitUnknownException unknown = inDoubt(committing, true);

            assertEquals(Optional.empty(), db.resolve(unknown, this::rowsOf100).await().atMost(TIMEOUT));
            assertEquals(1, select(committing, "SELECT 1"), "nothing was killed");
        }
    }

    /** A COMMIT in doubt on {@code committing}'s thread, on the server the pool's connections go to. */
    private Database.CommitUnknownException inDoubt(Connection committing, boolean clustered) throws SQLException {
        String server = pool.withConnection(conn -> Uni.createFrom().item(connections.threadOf(conn).orElseThrow()))
                .await().atMost(TIMEOUT).server();
        long thread = select(committing, "SELECT CONNECTION_ID()");
        return new Database.CommitUnknownException(new Database.NoAnswerException(),
                Optional.of(new Connections.ServerThread(thread, server, clustered)));
    }

    private Uni<Long> rowsOf100(SqlClient client) {
        return client.query("SELECT COUNT(*) AS n FROM " + TABLE + " WHERE id = 100").execute()
                .map(rows -> rows.iterator().next().getLong("n"));
    }

    private static long select(Connection conn, String sql) throws SQLException {
        try (Statement st = conn.createStatement(); var rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static Connection jdbc() throws SQLException {
        return DriverManager.getConnection(ConfigProvider.getConfig().getValue("quarkus.datasource.jdbc.url", String.class),
                "root", "");
    }

    /** Whether the pool knows the server thread of a connection it lends, as the server reports it. */
    private Uni<Boolean> threadKnown() {
        return pool.withConnection(conn -> conn.query("SELECT CONNECTION_ID() AS id").execute()
                .onItem().delayIt().by(Duration.ofMillis(200))
                .map(rows -> connections.threadOf(conn)
                        .map(thread -> thread.thread() == rows.iterator().next().getLong("id")).orElse(false)));
    }

    private static Uni<Void> add(SqlClient tx, int id) {
        return tx.query("UPDATE " + TABLE + " SET v = v + 1 WHERE id = " + id).execute().replaceWithVoid();
    }

    private List<Integer> values(int... ids) {
        return Arrays.stream(ids).mapToObj(id -> pool.query("SELECT v FROM " + TABLE + " WHERE id = " + id)
                .execute().await().atMost(TIMEOUT).iterator().next().getInteger("v")).toList();
    }
}
