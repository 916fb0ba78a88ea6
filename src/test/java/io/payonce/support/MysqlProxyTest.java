package io.payonce.support;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.payonce.support.MysqlProxy.Forgery;
import io.payonce.support.MysqlProxy.Hold;
import io.payonce.support.MysqlProxy.StatementCount;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.mysqlclient.MySQLBuilder;
import io.vertx.mysqlclient.MySQLConnectOptions;
import io.vertx.mysqlclient.MySQLException;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;

/**
 * {@link MysqlProxy} between a client and the shared MariaDB: a held COMMIT reaches the server late, a held
 * answer reaches the client late while the transaction is already visible, statements are counted by their
 * text however they are sent, and everything else passes as it would directly. The Vert.x client is set up
 * as the application's datasource is (prepared statements cached, three commands pipelined per connection);
 * the MariaDB driver is the other client. Another connection, straight to the server, is the observer.
 */
class MysqlProxyTest {

    private static final int SERVER_PORT = 3306;
    private static final String DATABASE = "payonce_mproxy";
    private static final String TABLE = "probes";
    private static final Duration HOLD = Duration.ofSeconds(2);
    private static final Duration BOUND = Duration.ofSeconds(5);

    private static Vertx vertx;
    private MysqlProxy proxy;
    private Pool pool;

    @BeforeAll
    static void database() throws SQLException {
        vertx = Vertx.vertx();
        try (Connection c = DriverManager.getConnection("jdbc:mariadb://127.0.0.1:" + SERVER_PORT + "/", "root", "");
                Statement st = c.createStatement()) {
            st.execute("CREATE DATABASE IF NOT EXISTS " + DATABASE);
            st.execute("CREATE TABLE IF NOT EXISTS " + DATABASE + "." + TABLE
                    + " (id BIGINT PRIMARY KEY, note MEDIUMTEXT NOT NULL)");
        }
    }

    @AfterAll
    static void closeVertx() {
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }

    @BeforeEach
    void proxy() throws Exception {
        try (Connection c = direct(); Statement st = c.createStatement()) {
            st.execute("DELETE FROM " + TABLE);
        }
        proxy = new MysqlProxy(SERVER_PORT);
        pool = MySQLBuilder.pool().with(new PoolOptions().setMaxSize(1))
                .connectingTo(new MySQLConnectOptions().setHost("127.0.0.1").setPort(proxy.port())
                        .setDatabase(DATABASE).setUser("root").setPipeliningLimit(3)
                        .setCachePreparedStatements(true).setUseAffectedRows(true))
                .using(vertx).build();
    }

    @AfterEach
    void close() {
        pool.close().toCompletionStage().toCompletableFuture().join();
        proxy.close();
    }

    @Test
    void heldCommit_reachesTheServerLate_andOthersSeeTheRowOnlyThen() throws Exception {
        // given: a transaction through the proxy with a row inserted, the next COMMIT to be held
        try (Connection client = transactionInserting(1)) {
            Hold hold = proxy.holdNextCommit(HOLD);

            // when: it commits
            long sentAt = System.nanoTime();
            CompletableFuture<Void> commit = commitInTheBackground(client);
            hold.awaitCaught(BOUND);
            boolean visibleWhileHeld = visible(1);
            Await.until("the row visible to another connection", HOLD.plus(BOUND), () -> visible(1));
            Duration invisibleFor = Duration.ofNanos(System.nanoTime() - sentAt);
            commit.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);

            // then: the row stayed invisible while the COMMIT was held, and became visible once it went on
            assertAll("invisible for " + invisibleFor + "; lost track: " + proxy.lostTrack(),
                    () -> assertFalse(visibleWhileHeld, "not visible while the COMMIT is held"),
                    () -> assertTrue(invisibleFor.compareTo(HOLD) >= 0, "invisible for the hold"),
                    () -> assertTrue(invisibleFor.compareTo(HOLD.plusSeconds(2)) < 0, "visible soon after it"),
                    () -> assertTrue(hold.released().isDone(), "the COMMIT was passed on"),
                    () -> assertEquals(List.of(), proxy.lostTrack()));
        }
    }

    @Test
    void heldCommitAnswer_rowIsVisibleWhileTheCommitterStillWaits() throws Exception {
        // given: a transaction through the proxy with a row inserted, the next COMMIT's answer to be held
        try (Connection client = transactionInserting(2)) {
            Hold hold = proxy.holdNextCommitAnswer(HOLD);

            // when: it commits
            long sentAt = System.nanoTime();
            CompletableFuture<Void> commit = commitInTheBackground(client);
            hold.awaitCaught(BOUND);
            Await.until("the row visible to another connection", BOUND, () -> visible(2));
            boolean committerWaitingWhenSeen = !commit.isDone();
            commit.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
            Duration answeredAfter = Duration.ofNanos(System.nanoTime() - sentAt);

            // then: the row was committed and visible before the committer heard so, the hold's length later
            assertAll("answered after " + answeredAfter + "; lost track: " + proxy.lostTrack(),
                    () -> assertTrue(committerWaitingWhenSeen, "the committer still waited when the row was seen"),
                    () -> assertTrue(answeredAfter.compareTo(HOLD) >= 0, "the answer came the hold's length late"),
                    () -> assertTrue(hold.released().isDone(), "the answer was passed on"),
                    () -> assertEquals(List.of(), proxy.lostTrack()));
        }
    }

    @Test
    void heldCommitAnswer_answersPipelinedBeforeItPassAtOnce() throws Exception {
        // given: one connection with three commands in flight at a time, the next COMMIT's answer to be held
        SqlConnection connection = await(pool.getConnection());
        Hold hold = proxy.holdNextCommitAnswer(HOLD);

        // when: a slow statement is still running on the connection when its COMMIT is sent behind it
        long sentAt = System.nanoTime();
        connection.query("BEGIN").execute();
        connection.query("INSERT INTO " + TABLE + " VALUES (3, 'pipelined')").execute();
        Future<RowSet<Row>> slow = connection.query("SELECT SLEEP(0.3)").execute();
        Future<RowSet<Row>> commit = connection.query("COMMIT").execute();
        Future<RowSet<Row>> after = connection.query("SELECT 1").execute();
        await(slow);
        Duration slowAnsweredAfter = Duration.ofNanos(System.nanoTime() - sentAt);
        await(commit);
        Duration commitAnsweredAfter = Duration.ofNanos(System.nanoTime() - sentAt);
        await(after);
        Duration afterAnsweredAfter = Duration.ofNanos(System.nanoTime() - sentAt);
        await(connection.close());

        // then: the answer before the COMMIT's came at once; the COMMIT's and the one behind it, the hold's length late
        assertAll("slow " + slowAnsweredAfter + ", commit " + commitAnsweredAfter + ", after " + afterAnsweredAfter,
                () -> assertTrue(hold.caught().isDone(), "the COMMIT's answer was held"),
                () -> assertTrue(slowAnsweredAfter.compareTo(HOLD.dividedBy(2)) < 0, "the earlier answer was not held"),
                () -> assertTrue(commitAnsweredAfter.compareTo(HOLD) >= 0, "the COMMIT's answer was held"),
                () -> assertTrue(afterAnsweredAfter.compareTo(HOLD) >= 0, "the answer behind it waited"),
                () -> assertEquals(List.of(), proxy.lostTrack()));
    }

    @Test
    void forgedCommitAnswer_clientIsToldTheError_whileTheServerCommitted_andTheConversationGoesOn() throws Exception {
        // given: a transaction through the proxy with a row inserted, the next COMMIT's answer to be forged
        try (Connection client = transactionInserting(5)) {
            Forgery forgery = proxy.forgeNextCommitAnswer(1180, "HY000", "Got error 1 during COMMIT");

            // when: it commits, then asks for something more on the same connection
            SQLException refused = assertThrows(SQLException.class, client::commit);
            String serverAnswer = forgery.awaitServerAnswer(BOUND);
            long afterwards;
            try (Statement st = client.createStatement(); ResultSet rows = st.executeQuery("SELECT 42")) {
                rows.next();
                afterwards = rows.getLong(1);
            }

            // then: the client was told the forged error, the server had committed, and nothing else changed
            assertAll("refused with " + refused + "; lost track: " + proxy.lostTrack(),
                    () -> assertEquals(1180, refused.getErrorCode()),
                    () -> assertEquals("HY000", refused.getSQLState()),
                    () -> assertEquals("OK", serverAnswer, "the server answered OK"),
                    () -> assertTrue(visible(5), "the row is committed"),
                    () -> assertEquals(42, afterwards, "the next answer is read as usual"),
                    () -> assertEquals(0, proxy.awaitingAnswers(), "every answer walked to its end"),
                    () -> assertEquals(List.of(), proxy.lostTrack()));
        }
    }

    @Test
    void conditionalCommitAnswerHold_letsOtherCommitsPass_andHoldsTheOneOfAMatchingTransaction() throws Exception {
        // given: the answer to be held of the next COMMIT of a transaction that deletes
        Hold hold = proxy.holdNextCommitAnswerAfter("(?i)^\\s*DELETE\\b", HOLD);

        // when: a transaction that inserts commits, then one that deletes what it inserted
        long insertSentAt = System.nanoTime();
        try (Connection inserting = transactionInserting(8)) {
            inserting.commit();
        }
        Duration insertAnsweredAfter = Duration.ofNanos(System.nanoTime() - insertSentAt);
        boolean caughtByTheInsert = hold.caught().isDone();
        try (Connection deleting = transactionInserting(9);
                PreparedStatement delete = deleting.prepareStatement("DELETE FROM " + TABLE + " WHERE id = ?")) {
            delete.setLong(1, 8);
            delete.executeUpdate();
            CompletableFuture<Void> commit = commitInTheBackground(deleting);
            hold.awaitCaught(BOUND);
            Await.until("the delete visible to another connection", BOUND, () -> !visible(8));
            boolean committerWaitingWhenSeen = !commit.isDone();
            commit.get(HOLD.plus(BOUND).toMillis(), TimeUnit.MILLISECONDS);

            // then: the first COMMIT was answered at once; the deleting one's answer was held
            assertAll("insert answered after " + insertAnsweredAfter + "; lost track: " + proxy.lostTrack(),
                    () -> assertFalse(caughtByTheInsert, "another transaction's COMMIT passed"),
                    () -> assertTrue(insertAnsweredAfter.compareTo(HOLD) < 0, "and was answered at once"),
                    () -> assertTrue(committerWaitingWhenSeen, "the deleting committer still waited when its delete was seen"),
                    () -> assertTrue(visible(9), "its transaction committed whole"),
                    () -> assertEquals(List.of(), proxy.lostTrack()));
        }
    }

    @Test
    void refusedStatements_failWithTheErrorAndNeverRun_whileTheOthersOnTheConnectionDo() throws Exception {
        // given: inserts refused with a lock wait timeout
        proxy.refuse("(?i)^\\s*INSERT\\b", 1205);
        StatementCount inserts = proxy.count("(?i)^\\s*INSERT\\b");
        SqlConnection connection = await(pool.getConnection());

        // when: a prepared insert, a read and a text insert are pipelined on one connection; then the refusal ends
        Future<RowSet<Row>> prepared = connection.preparedQuery("INSERT INTO " + TABLE + " VALUES (?, ?)")
                .execute(Tuple.of(10, "refused"));
        Future<RowSet<Row>> read = connection.query("SELECT 41 + 1").execute();
        Future<RowSet<Row>> text = connection.query("INSERT INTO " + TABLE + " VALUES (11, 'refused')").execute();
        Throwable preparedFailure = failure(prepared);
        int answer = await(read).iterator().next().getInteger(0);
        Throwable textFailure = failure(text);
        int refused = proxy.stopRefusing();
        await(connection.preparedQuery("INSERT INTO " + TABLE + " VALUES (?, ?)").execute(Tuple.of(12, "passed")));
        await(connection.close());

        // then: both inserts failed with the error and wrote nothing; the read and the later insert ran
        assertAll("prepared: " + preparedFailure + "; text: " + textFailure + "; lost track: " + proxy.lostTrack(),
                () -> assertEquals(1205, errorCode(preparedFailure)),
                () -> assertEquals(1205, errorCode(textFailure)),
                () -> assertEquals(42, answer),
                () -> assertEquals(2, refused),
                () -> assertFalse(visible(10)),
                () -> assertFalse(visible(11)),
                () -> assertTrue(visible(12)),
                () -> assertEquals(1, inserts.runs(), "only the insert after the refusal ran"),
                () -> assertEquals(0, proxy.awaitingAnswers(), "every answer walked to its end"),
                () -> assertEquals(List.of(), proxy.lostTrack()));
    }

    @Test
    void statementsAreCountedByText_whetherSentAsTextOrExecutedFromACachedPrepare() throws Exception {
        // given: a count of the reads of the table, and one of the inserts
        StatementCount reads = proxy.count("(?is)^\\s*SELECT\\b.*\\b" + TABLE + "\\b");
        StatementCount inserts = proxy.count("(?i)^\\s*INSERT\\b");

        // when: a matching and an unmatching prepared statement run five times each, interleaved and
        // pipelined on one connection, then a matching text query and one insert
        List<Future<RowSet<Row>>> pipelined = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            pipelined.add(pool.preparedQuery("SELECT note FROM " + TABLE + " WHERE id = ?").execute(Tuple.of(i)));
            pipelined.add(pool.preparedQuery("SELECT ? + 1").execute(Tuple.of(i)));
        }
        pipelined.forEach(MysqlProxyTest::await);
        await(pool.query("SELECT COUNT(*) FROM " + TABLE).execute());
        await(pool.preparedQuery("INSERT INTO " + TABLE + " VALUES (?, ?)").execute(Tuple.of(4, "counted")));

        // then: each run counted against its own text; the cache prepared each statement once
        assertAll(reads + "; " + inserts + "; lost track: " + proxy.lostTrack(),
                () -> assertEquals(6, reads.runs(), "five executions and a text query"),
                () -> assertEquals(1, reads.prepares(), "prepared once, executed by id after"),
                () -> assertEquals(1, inserts.runs()),
                () -> assertEquals(1, inserts.prepares()),
                () -> assertEquals(List.of(), proxy.lostTrack()));
    }

    @Test
    void ordinaryTraffic_passesUnchanged() throws Exception {
        // given: one connection through the proxy with commands pipelined on it
        SqlConnection connection = await(pool.getConnection());
        String big = "x".repeat(100_000);

        // when: inserts (a value spanning many reads among them), a failing one, a multi-packet-sequence read
        // of 300 rows, and the big value read back, all sent without waiting for the answers
        List<Future<RowSet<Row>>> inserts = new ArrayList<>();
        for (int id = 1; id <= 20; id++) {
            inserts.add(connection.preparedQuery("INSERT INTO " + TABLE + " VALUES (?, ?)")
                    .execute(Tuple.of(id, id == 7 ? big : "note " + id)));
        }
        Future<RowSet<Row>> duplicate = connection.preparedQuery("INSERT INTO " + TABLE + " VALUES (?, ?)")
                .execute(Tuple.of(1, "again"));
        Future<RowSet<Row>> many = connection.query("INSERT INTO " + TABLE
                + " SELECT seq, CONCAT('row ', seq) FROM seq_100_to_399").execute();
        Future<RowSet<Row>> all = connection.preparedQuery("SELECT id, note FROM " + TABLE + " ORDER BY id")
                .execute();
        Future<RowSet<Row>> bigBack = connection.query("SELECT note FROM " + TABLE + " WHERE id = 7").execute();
        inserts.forEach(MysqlProxyTest::await);
        Throwable duplicateFailure = failure(duplicate);
        int inserted = await(many).rowCount();
        List<String> throughProxy = new ArrayList<>();
        await(all).forEach(row -> throughProxy.add(row.getLong(0) + ":" + row.getString(1)));
        String bigThroughProxy = await(bigBack).iterator().next().getString(0);
        await(connection.close());

        // then: every answer is what the server gave, and the proxy followed each to its end
        List<String> direct = new ArrayList<>();
        try (Connection c = direct();
                ResultSet rows = c.createStatement().executeQuery("SELECT id, note FROM " + TABLE + " ORDER BY id")) {
            while (rows.next()) {
                direct.add(rows.getLong(1) + ":" + rows.getString(2));
            }
        }
        assertAll("lost track: " + proxy.lostTrack(),
                () -> assertTrue(String.valueOf(duplicateFailure).contains("Duplicate"), "the duplicate failed"),
                () -> assertEquals(300, inserted),
                () -> assertEquals(320, throughProxy.size()),
                () -> assertEquals(direct, throughProxy, "rows as the server has them"),
                () -> assertEquals(big, bigThroughProxy),
                () -> assertEquals(0, proxy.awaitingAnswers(), "every answer walked to its end"),
                () -> assertEquals(List.of(), proxy.lostTrack()));
    }

    @Test
    void greeting_offersNeitherTlsNorCompression() throws Exception {
        // given: a server whose greeting offers TLS, compression and MariaDB's extended capabilities
        byte[] offered = greeting(0xfffe, 0x8fff, 0x1d);
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                MysqlProxy proxy = new MysqlProxy(server.getLocalPort());
                Socket client = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
            try (Socket accepted = server.accept()) {
                accepted.getOutputStream().write(offered);

                // when: the client reads it through the proxy
                byte[] received = new byte[offered.length];
                new DataInputStream(client.getInputStream()).readFully(received);

                // then: those capabilities are gone, and nothing else changed
                byte[] expected = greeting(0xfffe & ~0x0820, 0x8fff & ~0x0e00, 0);
                assertArrayEquals(expected, received);
            }
        }
    }

    /**
     * A MariaDB greeting with these capabilities: the lower and upper two bytes of the standard ones, and the
     * four bytes of MariaDB's own.
     */
    private static byte[] greeting(int lower, int upper, int mariadb) throws IOException {
        ByteArrayOutputStream payload = new ByteArrayOutputStream();
        payload.write(10);
        payload.write("5.5.5-10.11.19-MariaDB\0".getBytes(StandardCharsets.US_ASCII));
        payload.write(new byte[] { 7, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0 });
        payload.write(new byte[] { (byte) lower, (byte) (lower >> 8), 45, 2, 0, (byte) upper, (byte) (upper >> 8), 21 });
        payload.write(new byte[6]);
        payload.write(new byte[] { (byte) mariadb, (byte) (mariadb >> 8), (byte) (mariadb >> 16), (byte) (mariadb >> 24) });
        payload.write("abcdefghijkl\0mysql_native_password\0".getBytes(StandardCharsets.US_ASCII));
        ByteArrayOutputStream packet = new ByteArrayOutputStream();
        int length = payload.size();
        packet.write(new byte[] { (byte) length, (byte) (length >> 8), (byte) (length >> 16), 0 });
        payload.writeTo(packet);
        return packet.toByteArray();
    }

    private static Connection direct() throws SQLException {
        return DriverManager.getConnection("jdbc:mariadb://127.0.0.1:" + SERVER_PORT + "/" + DATABASE, "root", "");
    }

    /** A connection through the proxy, by the MariaDB driver, in a transaction that has inserted row {@code id}. */
    private Connection transactionInserting(long id) throws SQLException {
        Connection connection = DriverManager.getConnection(
                "jdbc:mariadb://127.0.0.1:" + proxy.port() + "/" + DATABASE, "root", "");
        connection.setAutoCommit(false);
        try (PreparedStatement st = connection.prepareStatement("INSERT INTO " + TABLE + " VALUES (?, ?)")) {
            st.setLong(1, id);
            st.setString(2, "inserted in a transaction");
            st.executeUpdate();
        }
        return connection;
    }

    private static CompletableFuture<Void> commitInTheBackground(Connection connection) {
        return CompletableFuture.runAsync(() -> {
            try {
                connection.commit();
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    private static boolean visible(long id) throws SQLException {
        try (Connection c = direct();
                PreparedStatement st = c.prepareStatement("SELECT COUNT(*) FROM " + TABLE + " WHERE id = ?")) {
            st.setLong(1, id);
            try (ResultSet rows = st.executeQuery()) {
                rows.next();
                return rows.getLong(1) == 1;
            }
        }
    }

    private static Throwable failure(Future<?> future) throws Exception {
        return future.toCompletionStage().toCompletableFuture().handle((rows, failure) -> failure)
                .get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static int errorCode(Throwable failure) {
        return failure instanceof MySQLException e ? e.getErrorCode() : -1;
    }

    private static <T> T await(Future<T> future) {
        try {
            return future.toCompletionStage().toCompletableFuture().get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
