package io.payonce.database;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.WeakHashMap;

import jakarta.inject.Singleton;

import io.quarkus.reactive.mysql.client.MySQLPoolCreator;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Vertx;
import io.vertx.mysqlclient.MySQLConnectOptions;
import io.vertx.mysqlclient.MySQLConnection;
import io.vertx.mysqlclient.MySQLPool;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.impl.Connection;
import io.vertx.sqlclient.impl.SqlConnectionInternal;

/**
 * Creates the datasource's pool and prepares each physical connection when it opens.
 *
 * <p>Causal reads: every read (and BEGIN) waits until the node applied what the cluster committed before
 * it ({@code wsrep_sync_wait = 1}). A Galera node applies the other nodes' commits asynchronously: without
 * the wait, a read right after a commit on another node can miss its row, and a duplicate waiting for the
 * first request's answer, or the reconciler choosing what to settle, would decide on an old state. Writes
 * need no wait: one that ran on an old row is refused at its COMMIT (1213) and runs again, see
 * {@link Database}. MariaDB without a cluster accepts the setting and does not wait; MySQL without Galera
 * does not know it, and that refusal is ignored.
 *
 * <p>Server threads: the server's thread id of each connection, and which server and whether it is a
 * Galera node, are read once when it opens, so that a COMMIT whose answer never came can be resolved by
 * killing exactly that thread on exactly that server ({@link Database#resolve}); the connection that
 * resolves is opened apart from the pool, so it never waits behind the COMMIT in doubt.
 */
@Singleton
public class Connections implements MySQLPoolCreator {

    static final String WAIT_FOR_THE_CLUSTER = "SET SESSION wsrep_sync_wait = 1";
    private static final String WHO_AM_I = "SELECT CONNECTION_ID() AS thread, @@hostname AS host, @@port AS port,"
            + " @@server_id AS server_id";
    /** A Galera node reports its cluster's size; other servers report nothing, or 0. */
    private static final String CLUSTER_SIZE = "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'";

    /** Where a connection's statements run: the server and its thread for this connection. */
    public record ServerThread(long thread, String server, boolean clustered) {

        /** The same server, seen from another of its connections. */
        boolean sameServer(ServerThread other) {
            return server.equals(other.server);
        }
    }

    /** Physical connections (the pool's, which outlive the wrappers each borrower gets) to their threads. */
    private final Map<Connection, ServerThread> threads = Collections.synchronizedMap(new WeakHashMap<>());
    private volatile Vertx vertx;
    private volatile List<MySQLConnectOptions> options = List.of();

    @Override
    @SuppressWarnings("deprecation") // the one factory that returns the MySQLPool Quarkus expects of a creator
    public Pool create(Input input) {
        this.vertx = input.vertx();
        this.options = List.copyOf(input.mySQLConnectOptionsList());
        MySQLPool pool = MySQLPool.pool(input.vertx(), input.mySQLConnectOptionsList(), input.poolOptions());
        // the handler hands the new connection to the pool by closing it, once its preparation answered
        pool.connectHandler(conn -> conn.query(WAIT_FOR_THE_CLUSTER).execute()
                .transform(set -> identify(conn))
                .onComplete(identified -> {
                    if (identified.succeeded()) {
                        threads.put(physical(conn), identified.result());
                    }
                    conn.close();
                }));
        return pool;
    }

    /** The server thread of a pooled connection, when it was read at its opening. */
    public Optional<ServerThread> threadOf(io.vertx.mutiny.sqlclient.SqlConnection conn) {
        return Optional.ofNullable(threads.get(physical(conn.getDelegate())));
    }

    /**
     * A connection of its own, outside the pool, to the first configured server, with its server thread;
     * the caller closes it.
     */
    Uni<Identified> connectApart() {
        Vertx current = vertx;
        if (current == null || options.isEmpty()) {
            return Uni.createFrom().failure(new IllegalStateException("the pool is not created yet"));
        }
        return Uni.createFrom().completionStage(() -> MySQLConnection.connect(current, options.get(0))
                .flatMap(conn -> identify(conn).map(thread -> new Identified(
                        io.vertx.mutiny.sqlclient.SqlConnection.newInstance(conn), thread))
                        .onFailure(e -> conn.close()))
                .toCompletionStage());
    }

    /** A connection opened apart, and its server thread. */
    record Identified(io.vertx.mutiny.sqlclient.SqlConnection connection, ServerThread thread) {
    }

    private static io.vertx.core.Future<ServerThread> identify(SqlConnection conn) {
        return conn.query(WHO_AM_I).execute().flatMap(who -> conn.query(CLUSTER_SIZE).execute()
                .recover(notGalera -> io.vertx.core.Future.succeededFuture(null))
                .map(size -> {
                    Row row = who.iterator().next();
                    String server = row.getValue("host") + ":" + row.getValue("port") + "#" + row.getValue("server_id");
                    return new ServerThread(((Number) row.getValue("thread")).longValue(), server, clustered(size));
                }));
    }

    private static boolean clustered(RowSet<Row> size) {
        if (size == null || size.size() == 0) {
            return false;
        }
        try {
            return Integer.parseInt(String.valueOf(size.iterator().next().getValue(1))) > 0;
        } catch (NumberFormatException notANumber) {
            return false;
        }
    }

    private static Connection physical(SqlConnection conn) {
        return ((SqlConnectionInternal) conn).unwrap();
    }
}
