package io.payonce.database;

import jakarta.inject.Singleton;

import io.quarkus.reactive.mysql.client.MySQLPoolCreator;
import io.vertx.mysqlclient.MySQLPool;
import io.vertx.sqlclient.Pool;

/**
 * Creates the datasource's pool so that every connection's reads see every write already committed, on a
 * Galera cluster too. A Galera node applies the other nodes' commits asynchronously: without waiting, a
 * read right after a commit on another node can miss its row, and a duplicate waiting for the first
 * request's answer, or the reconciler choosing what to settle, would decide on an old state. With
 * {@code wsrep_sync_wait = 1} each read (and BEGIN) first waits until the node has applied what the
 * cluster committed before it. Writes need no wait: one that ran on an old row is refused at its COMMIT
 * (1213) and runs again, see {@link Database}. Elsewhere the setting changes nothing: MariaDB without a
 * cluster accepts it and does not wait; MySQL without Galera does not know it, and that refusal is ignored.
 */
@Singleton
public class CausalReads implements MySQLPoolCreator {

    static final String WAIT_FOR_THE_CLUSTER = "SET SESSION wsrep_sync_wait = 1";

    @Override
    @SuppressWarnings("deprecation") // the one factory that returns the MySQLPool Quarkus expects of a creator
    public Pool create(Input input) {
        MySQLPool pool = MySQLPool.pool(input.vertx(), input.mySQLConnectOptionsList(), input.poolOptions());
        // the handler hands the new connection to the pool by closing it, once the setting has answered
        pool.connectHandler(conn -> conn.query(WAIT_FOR_THE_CLUSTER).execute().onComplete(set -> conn.close()));
        return pool;
    }
}
