package io.payonce.idempotency;

import static io.payonce.idempotency.TokenStatus.AVAILABLE;
import static io.payonce.idempotency.TokenStatus.COMPLETED;
import static io.payonce.idempotency.TokenStatus.IN_PROGRESS;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.database.UtcTime;
import io.payonce.state.StateMachine.Transition;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.SqlClient;
import io.vertx.mutiny.sqlclient.Tuple;

/**
 * SQL for idempotency tokens (layer 1). Each state change names the state it expects, and finds its row
 * by the key it names, forced: when few rows are in a state, MariaDB's optimizer may prefer the
 * (state, lease_until) index and so lock the entries of other tokens in that state, making the release
 * of dead leases wait for settlements, or deadlock with them.
 */
@ApplicationScoped
public class TokenRepository {

    /**
     * A token's first claim: its row is created IN_PROGRESS and bound to the fingerprint at once. The unique
     * key lets exactly one first claim insert it; every other copy fails with a duplicate key.
     */
    private static final String INSERT_CLAIMED = """
            INSERT INTO idempotency_tokens (merchant_id, token, state, fingerprint, request_no, lease_until, expires_at,
                created_at, updated_at, epoch)
            VALUES (?, ?, ?, ?, ?, DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND), ?, ?, ?, 1)""";

    /**
     * Claiming a released token again: only one caller can move an AVAILABLE, unexpired token whose
     * fingerprint is unbound or equal to its own into IN_PROGRESS, under the next epoch.
     */
    private static final String CLAIM = """
            UPDATE idempotency_tokens FORCE INDEX (uq_tokens_merchant_token)
            SET state = ?, fingerprint = ?, request_no = ?, lease_until = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND),
                response_status = NULL, response_body = NULL, updated_at = ?, epoch = epoch + 1
            WHERE merchant_id = ? AND token = ? AND state = ? AND expires_at > ?
              AND (fingerprint IS NULL OR fingerprint = ?)""";

    private static final String FIND = "SELECT " + TokenRow.COLUMNS + " FROM idempotency_tokens WHERE merchant_id = ? AND token = ?";

    /**
     * The row as the last transaction to write it left it: a shared lock waits for a claim in flight (an insert
     * or update not yet committed) instead of reading around it, and is let go at once (autocommit).
     */
    private static final String FIND_LATEST = FIND + " LOCK IN SHARE MODE";

    /** The epoch a claim just took, read in the claim's own transaction. */
    private static final String EPOCH = "SELECT epoch FROM idempotency_tokens WHERE merchant_id = ? AND token = ?";

    private static final String COMPLETE = """
            UPDATE idempotency_tokens FORCE INDEX (uq_tokens_merchant_token)
            SET state = ?, response_status = ?, response_body = ?, lease_until = NULL, updated_at = ?
            WHERE merchant_id = ? AND token = ? AND state = ? AND epoch = ?""";

    private static final String RELEASE = """
            UPDATE idempotency_tokens FORCE INDEX (uq_tokens_merchant_token)
            SET state = ?, lease_until = NULL, response_status = NULL, response_body = NULL, updated_at = ?
            WHERE merchant_id = ? AND token = ? AND state = ? AND epoch = ?""";

    /**
     * A dead owner's token with no payment record behind it can safely execute again. Leases are set and
     * compared on the database's clock, which every instance shares.
     */
    private static final String DEAD = """
            t.state = ? AND t.lease_until < UTC_TIMESTAMP(3)
              AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.merchant_id = t.merchant_id AND p.token = t.token)""";

    /**
     * Dead leases, found by a plain read: a locking scan of the (state, lease_until) index would lock
     * the index entries of live tokens too and deadlock with their settlements, which lock the token's
     * row first and its index entry after.
     */
    private static final String DEAD_LEASES = "SELECT t.merchant_id, t.token FROM idempotency_tokens t WHERE "
            + DEAD + " LIMIT ?";

    /**
     * Releases the dead leases named by key, the same conditions checked again under the row's lock.
     * Keys are equalities ORed, not a row-constructor IN, which MariaDB scans the whole table for.
     */
    private static final String RELEASE_DEAD = """
            UPDATE idempotency_tokens t FORCE INDEX (uq_tokens_merchant_token)
            SET t.state = ?, t.lease_until = NULL, t.response_status = NULL, t.response_body = NULL,
                t.updated_at = ?
            WHERE (%s)""" + " AND " + DEAD;

    /**
     * In progress tokens are kept: reconciliation still has to store their answer. So are tokens whose final
     * answer a queue command is still owed (an AWAITING outbox row reads it from the token when it is sent).
     */
    private static final String PURGE_EXPIRED = """
            DELETE FROM idempotency_tokens WHERE expires_at < ? AND state <> ?
              AND NOT EXISTS (SELECT 1 FROM queue_outbox o WHERE o.merchant_id = idempotency_tokens.merchant_id
                  AND o.token = idempotency_tokens.token AND o.state = 'AWAITING')
            LIMIT ?""";

    private static final String FIND_SIGNING_KEY = "SELECT secret FROM token_signing_keys WHERE id = 1";

    /** The first instance's key wins; the others' are ignored. */
    private static final String OFFER_SIGNING_KEY = "INSERT IGNORE INTO token_signing_keys (id, secret) VALUES (1, ?)";

    /** A first claim inserts the row, a later one updates it: the same move either way. */
    private static final Transition<TokenStatus> CLAIMING = TokenStatus.MACHINE.move(AVAILABLE, IN_PROGRESS);

    private static final Transition<TokenStatus> COMPLETING = TokenStatus.MACHINE.move(IN_PROGRESS, COMPLETED);

    private static final Transition<TokenStatus> RELEASING = TokenStatus.MACHINE.move(IN_PROGRESS, AVAILABLE);

    private final Pool pool;

    TokenRepository(Pool pool) {
        this.pool = pool;
    }

    /** Inserts the token's row, claimed; fails with a duplicate-key error when the row exists already. */
    public Uni<Void> insertClaimed(SqlClient tx, String merchantId, String token, String fingerprint, String requestNo,
            Duration lease, Instant expiresAt, Instant now) {
        return tx.preparedQuery(INSERT_CLAIMED)
                .execute(Tuple.from(new Object[] { merchantId, token, CLAIMING.to().name(), fingerprint, requestNo,
                        UtcTime.micros(lease), UtcTime.toColumn(expiresAt), UtcTime.toColumn(now), UtcTime.toColumn(now) }))
                .replaceWithVoid();
    }

    /** The epoch this caller now owns the released token under; empty when another caller has it. */
    public Uni<Optional<Integer>> claim(SqlClient tx, String merchantId, String token, String fingerprint, String requestNo,
            Duration lease, Instant now) {
        return tx.preparedQuery(CLAIM)
                .execute(Tuple.from(new Object[] { CLAIMING.to().name(), fingerprint, requestNo, UtcTime.micros(lease),
                        UtcTime.toColumn(now), merchantId, token, CLAIMING.from().name(), UtcTime.toColumn(now), fingerprint }))
                .flatMap(rows -> rows.rowCount() != 1 ? Uni.createFrom().item(Optional.<Integer>empty())
                        : tx.preparedQuery(EPOCH).execute(Tuple.of(merchantId, token))
                                .map(epoch -> Optional.of(epoch.iterator().next().getInteger("epoch"))));
    }

    public Uni<Optional<TokenRow>> find(String merchantId, String token) {
        return find(FIND, merchantId, token);
    }

    /** The row once no claim of it is in flight (see {@link #FIND_LATEST}); empty when it has none. */
    public Uni<Optional<TokenRow>> findLatest(String merchantId, String token) {
        return find(FIND_LATEST, merchantId, token);
    }

    private Uni<Optional<TokenRow>> find(String sql, String merchantId, String token) {
        return pool.preparedQuery(sql).execute(Tuple.of(merchantId, token)).map(rows -> {
            var it = rows.iterator();
            return it.hasNext() ? Optional.of(TokenRow.from(it.next())) : Optional.empty();
        });
    }

    /**
     * Stores the final answer; false when the token was not in progress under {@code epoch} (someone settled
     * it first, or it was claimed again).
     */
    public Uni<Boolean> complete(SqlClient client, String merchantId, String token, int epoch, StoredResponse response,
            Instant now) {
        return client.preparedQuery(COMPLETE)
                .execute(Tuple.from(new Object[] { COMPLETING.to().name(), response.status(), response.body(),
                        UtcTime.toColumn(now), merchantId, token, COMPLETING.from().name(), epoch }))
                .map(rows -> rows.rowCount() == 1);
    }

    /** Makes a token in progress under {@code epoch} usable again; its fingerprint stays bound. */
    public Uni<Boolean> release(SqlClient tx, String merchantId, String token, int epoch, Instant now) {
        return tx.preparedQuery(RELEASE)
                .execute(Tuple.from(new Object[] { RELEASING.to().name(), UtcTime.toColumn(now), merchantId, token,
                        RELEASING.from().name(), epoch }))
                .map(rows -> rows.rowCount() == 1);
    }

    /** Releases up to {@code batch} dead leases; answers how many. */
    public Uni<Integer> releaseDead(Instant now, int batch) {
        Object at = UtcTime.toColumn(now);
        return pool.preparedQuery(DEAD_LEASES).execute(Tuple.of(RELEASING.from().name(), batch)).flatMap(found -> {
            if (found.size() == 0) {
                return Uni.createFrom().item(0);
            }
            List<Object> args = new ArrayList<>(List.of(RELEASING.to().name(), at));
            found.forEach(row -> {
                args.add(row.getString("merchant_id"));
                args.add(row.getString("token"));
            });
            args.add(RELEASING.from().name());
            String keys = String.join(" OR ", Collections.nCopies(found.size(), "(t.merchant_id = ? AND t.token = ?)"));
            return pool.preparedQuery(RELEASE_DEAD.formatted(keys)).execute(Tuple.from(args)).map(rows -> rows.rowCount());
        });
    }

    /** The signing key every instance on this database shares, storing {@code candidate} when there is none. */
    public Uni<String> signingKey(String candidate) {
        return pool.query(FIND_SIGNING_KEY).execute().flatMap(rows -> rows.size() > 0
                ? Uni.createFrom().item(rows.iterator().next().getString("secret"))
                : pool.preparedQuery(OFFER_SIGNING_KEY).execute(Tuple.of(candidate))
                        .flatMap(offered -> pool.query(FIND_SIGNING_KEY).execute())
                        .map(stored -> stored.iterator().next().getString("secret")));
    }

    /** Deletes up to {@code batch} expired tokens in one short statement; answers how many. */
    public Uni<Integer> purgeExpired(Instant now, int batch) {
        return pool.preparedQuery(PURGE_EXPIRED).execute(Tuple.of(UtcTime.toColumn(now), IN_PROGRESS.name(), batch))
                .map(rows -> rows.rowCount());
    }
}
