package io.payonce.queue;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.database.Database;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Tuple;

/**
 * PayOnce's own count of a command's deliveries after its first ({@code queue_attempts}), per merchant and
 * idempotency key, in place of the broker's delivery limit: a command that keeps failing (or kills every
 * instance that takes it) is stopped by this count, but dead-lettered only once its token shows that it never
 * executed. A count is written when the broker delivers the command again, before it runs, so a command that
 * crashes its instance is counted too; it is forgotten once the command is settled.
 */
@ApplicationScoped
public class CommandAttempts {

    private static final String COUNT = """
            INSERT INTO queue_attempts (merchant_id, idem_key, attempts, updated_at)
            VALUES (?, ?, 1, UTC_TIMESTAMP(3))
            ON DUPLICATE KEY UPDATE attempts = attempts + 1, updated_at = UTC_TIMESTAMP(3)""";

    private static final String READ = "SELECT attempts FROM queue_attempts WHERE merchant_id = ? AND idem_key = ?";

    private static final String FORGET = "DELETE FROM queue_attempts WHERE merchant_id = ? AND idem_key = ?";

    /**
     * Nothing ever ran under the token: it was never claimed, or its only claims were taken back (a release
     * after a charge refused before acceptance, or a dead owner's lease with no record behind it), and no
     * payment or refund record names it.
     */
    private static final String NEVER_EXECUTED = """
            SELECT NOT EXISTS (SELECT 1 FROM idempotency_tokens WHERE merchant_id = ? AND token = ? AND state <> 'AVAILABLE')
               AND NOT EXISTS (SELECT 1 FROM payments WHERE merchant_id = ? AND token = ?) AS never""";

    private final Pool pool;
    private final Database db;

    CommandAttempts(Pool pool, Database db) {
        this.pool = pool;
        this.db = db;
    }

    /** Counts one more delivery of the command and answers how many there were after its first. */
    Uni<Integer> count(String merchantId, String key) {
        return db.bounded(pool.preparedQuery(COUNT).execute(Tuple.of(merchantId, key)))
                .flatMap(counted -> db.bounded(pool.preparedQuery(READ).execute(Tuple.of(merchantId, key))))
                .map(rows -> rows.iterator().next().getInteger("attempts"));
    }

    /** True when the database shows that nothing ever ran under the token. */
    Uni<Boolean> neverExecuted(String merchantId, String key) {
        return db.bounded(pool.preparedQuery(NEVER_EXECUTED).execute(Tuple.of(merchantId, key, merchantId, key)))
                .map(rows -> rows.iterator().next().getInteger("never") == 1);
    }

    /** The command is settled (acknowledged or dead-lettered): its count goes. */
    Uni<Void> forget(String merchantId, String key) {
        return db.bounded(pool.preparedQuery(FORGET).execute(Tuple.of(merchantId, key))).replaceWithVoid();
    }
}
