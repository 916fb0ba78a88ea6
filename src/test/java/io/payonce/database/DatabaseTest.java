package io.payonce.database;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
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
 * again whole, and every pooled connection asks a Galera cluster to let its reads wait for what the
 * cluster committed.
 */
@QuarkusTest
class DatabaseTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final String TABLE = "database_test_rows";

    @Inject
    Database db;

    @Inject
    Pool pool;

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

    private static Uni<Void> add(SqlClient tx, int id) {
        return tx.query("UPDATE " + TABLE + " SET v = v + 1 WHERE id = " + id).execute().replaceWithVoid();
    }

    private List<Integer> values(int... ids) {
        return Arrays.stream(ids).mapToObj(id -> pool.query("SELECT v FROM " + TABLE + " WHERE id = " + id)
                .execute().await().atMost(TIMEOUT).iterator().next().getInteger("v")).toList();
    }
}
