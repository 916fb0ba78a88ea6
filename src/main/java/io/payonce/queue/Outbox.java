package io.payonce.queue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.database.Database;
import io.payonce.database.UtcTime;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;

/**
 * The queue entrance's outbox ({@code queue_outbox}): the answers owed to commands' reply queues, written
 * before a delivery is acknowledged and deleted once the broker confirmed them. A 202 leaves a second row,
 * AWAITING, which is sent once the command's token holds its final answer, whoever settled it: the
 * settlement stores that answer with the token in its own statement, and this row says where it goes.
 */
@ApplicationScoped
public class Outbox {

    static final String READY = "READY";
    static final String AWAITING = "AWAITING";

    private static final String INSERT = """
            INSERT INTO queue_outbox (state, merchant_id, token, reply_to, correlation_id, status, code, replayed, body,
                created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3))""";

    /** The 202 to send now, and the row that waits for the final answer, in one statement. */
    private static final String INSERT_INTERIM = INSERT + ", (?, ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3))";

    private static final String CLAIM_READY = """
            UPDATE queue_outbox FORCE INDEX (ix_outbox_state)
            SET claimed_by = ?, claimed_until = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND)
            WHERE state = 'READY' AND (claimed_until IS NULL OR claimed_until < UTC_TIMESTAMP(3))
            ORDER BY id LIMIT ?""";

    /**
     * AWAITING rows whose token now holds its final answer, once the 202 before them is sent (so that a
     * command's reader never gets the final answer before the interim one).
     */
    private static final String SETTLED = """
            SELECT o.id FROM queue_outbox o
            JOIN idempotency_tokens t ON t.merchant_id = o.merchant_id AND t.token = o.token
            WHERE o.state = 'AWAITING' AND t.state = 'COMPLETED'
              AND (o.claimed_until IS NULL OR o.claimed_until < UTC_TIMESTAMP(3))
              AND NOT EXISTS (SELECT 1 FROM queue_outbox r WHERE r.state = 'READY' AND r.merchant_id = o.merchant_id
                  AND r.token = o.token AND r.correlation_id <=> o.correlation_id)
            ORDER BY o.id LIMIT ?""";

    private static final String CLAIM_SETTLED = """
            UPDATE queue_outbox SET claimed_by = ?, claimed_until = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND)
            WHERE id IN (%s) AND state = 'AWAITING' AND (claimed_until IS NULL OR claimed_until < UTC_TIMESTAMP(3))""";

    /** What a claim took: a READY row's own answer, or an AWAITING row's token's final answer. */
    private static final String CLAIMED = """
            SELECT o.id, o.state, o.reply_to, o.correlation_id, o.status, o.code, o.replayed, o.body,
                t.response_status, t.response_body
            FROM queue_outbox o FORCE INDEX (ix_outbox_claim)
            LEFT JOIN idempotency_tokens t ON o.state = 'AWAITING' AND t.merchant_id = o.merchant_id AND t.token = o.token
            WHERE o.claimed_by = ? ORDER BY o.id""";

    private static final String DELETE_CLAIMED = "DELETE FROM queue_outbox WHERE claimed_by = ?";

    private static final String RELEASE_CLAIMED = """
            UPDATE queue_outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ?""";

    private static final String BACKLOG = """
            SELECT state, COUNT(*) AS n,
                TIMESTAMPDIFF(MICROSECOND, MIN(created_at), UTC_TIMESTAMP(3)) AS oldest_us
            FROM queue_outbox GROUP BY state""";

    /** One answer owed to a reply queue. */
    record Answer(String replyTo, String correlationId, int status, String code, boolean replayed, String body) {

        /** The answer of {@code status} and {@code body}, with the problem's {@code code} of a refusal. */
        static Answer of(String replyTo, String correlationId, int status, boolean replayed, String body) {
            return new Answer(replyTo, correlationId, status, status >= 400 ? Answers.codeOf(body) : null, replayed,
                    body);
        }
    }

    /** A claimed row, as it is to be sent. */
    record Claimed(long id, Answer answer) {
    }

    /** The backlog: rows READY and AWAITING, and the oldest READY row's age. */
    record Backlog(long ready, long awaiting, Optional<Duration> oldestReady) {
    }

    private final Pool pool;
    private final Database db;

    Outbox(Pool pool, Database db) {
        this.pool = pool;
        this.db = db;
    }

    /** Owes {@code answer}, final, for the command of {@code merchantId}'s token (both null for a refusal). */
    Uni<Void> owe(String merchantId, String token, Answer answer) {
        return db.bounded(pool.preparedQuery(INSERT).execute(Tuple.from(row(READY, merchantId, token, answer))))
                .replaceWithVoid();
    }

    /** Owes the 202 {@code interim} now, and the token's final answer once it holds one. */
    Uni<Void> oweInterim(String merchantId, String token, Answer interim) {
        Answer pending = new Answer(interim.replyTo(), interim.correlationId(), 0, null, true, "");
        List<Object> values = new ArrayList<>(row(READY, merchantId, token, interim));
        values.addAll(row(AWAITING, merchantId, token, pending));
        return db.bounded(pool.preparedQuery(INSERT_INTERIM).execute(Tuple.from(values))).replaceWithVoid();
    }

    /** Claims up to {@code batch} rows to send, for {@code lease}, under {@code claim}; answers them in order. */
    Uni<List<Claimed>> claim(String claim, Duration lease, int batch) {
        long leaseMicros = UtcTime.micros(lease);
        return db.bounded(pool.preparedQuery(CLAIM_READY).execute(Tuple.of(claim, leaseMicros, batch)))
                .flatMap(ready -> db.bounded(pool.preparedQuery(SETTLED).execute(Tuple.of(batch))))
                .flatMap(settled -> {
                    List<Object> ids = new ArrayList<>();
                    settled.forEach(r -> ids.add(r.getLong("id")));
                    if (ids.isEmpty()) {
                        return Uni.createFrom().voidItem();
                    }
                    List<Object> values = new ArrayList<>(List.of(claim, leaseMicros));
                    values.addAll(ids);
                    String sql = CLAIM_SETTLED.formatted(String.join(", ", Collections.nCopies(ids.size(), "?")));
                    return db.bounded(pool.preparedQuery(sql).execute(Tuple.from(values))).replaceWithVoid();
                })
                .flatMap(claimed -> db.bounded(pool.preparedQuery(CLAIMED).execute(Tuple.of(claim))))
                .map(rows -> {
                    List<Claimed> out = new ArrayList<>();
                    rows.forEach(r -> out.add(new Claimed(r.getLong("id"), answerOf(r))));
                    return out;
                });
    }

    /** The claimed rows were sent: gone. */
    Uni<Void> sent(String claim) {
        return db.bounded(pool.preparedQuery(DELETE_CLAIMED).execute(Tuple.of(claim))).replaceWithVoid();
    }

    /** The claimed rows could not be sent: free for the next try, here or on another instance. */
    Uni<Void> release(String claim) {
        return db.bounded(pool.preparedQuery(RELEASE_CLAIMED).execute(Tuple.of(claim))).replaceWithVoid();
    }

    Uni<Backlog> backlog() {
        return db.bounded(pool.query(BACKLOG).execute()).map(rows -> {
            long ready = 0;
            long awaiting = 0;
            Optional<Duration> oldest = Optional.empty();
            for (Row r : rows) {
                if (READY.equals(r.getString("state"))) {
                    ready = r.getLong("n");
                    Long micros = r.getLong("oldest_us");
                    oldest = Optional.ofNullable(micros).map(us -> Duration.ofNanos(Math.max(0, us) * 1_000));
                } else {
                    awaiting = r.getLong("n");
                }
            }
            return new Backlog(ready, awaiting, oldest);
        });
    }

    private static List<Object> row(String state, String merchantId, String token, Answer answer) {
        return Arrays.asList(state, merchantId, token, answer.replyTo(), answer.correlationId(),
                answer.status(), answer.code(), answer.replayed() ? 1 : 0, answer.body());
    }

    /** A READY row's own answer; an AWAITING row's is its token's final answer, sent as a replay. */
    private static Answer answerOf(Row r) {
        if (AWAITING.equals(r.getString("state"))) {
            return Answer.of(r.getString("reply_to"), r.getString("correlation_id"), r.getInteger("response_status"),
                    true, r.getString("response_body"));
        }
        return new Answer(r.getString("reply_to"), r.getString("correlation_id"), r.getInteger("status"),
                r.getString("code"), r.getInteger("replayed") != 0, r.getString("body"));
    }
}
