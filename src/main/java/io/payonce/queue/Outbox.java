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

    private static final String COLUMNS = """
            state, merchant_id, token, reply_to, correlation_id, status, code, replayed, is_final, body, created_at""";

    private static final String INSERT = "INSERT INTO queue_outbox (" + COLUMNS + """
            )
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3))""";

    /**
     * A token whose final answer is owed by a durable record: settled already (its answer stored), or in
     * progress with a payment (or refund) record that recovery settles and its opener can no longer take back,
     * because the opener recorded its interim 202 (after which it never undoes) or a reconciler took the record
     * over (its epoch moved past the token claim's). A record whose opener may still undo it (a charge refused
     * before acceptance deletes it and frees the token) owes nothing yet.
     */
    private static final String OWED_BY_RECORD = """
            EXISTS (SELECT 1 FROM idempotency_tokens t WHERE t.merchant_id = ? AND t.token = ?
                AND (t.state = 'COMPLETED' OR (t.state = 'IN_PROGRESS' AND (t.response_status = 202
                    OR EXISTS (SELECT 1 FROM payments p WHERE p.merchant_id = t.merchant_id AND p.token = t.token
                        AND p.epoch <> t.epoch)))))""";

    /**
     * The answer to send now, and the row that waits for the final answer, in one statement, written only
     * when the token's final answer is {@link #OWED_BY_RECORD owed by a record}: two rows, or none.
     */
    private static final String INSERT_OWED = "INSERT INTO queue_outbox (" + COLUMNS + ")\n" + """
            SELECT * FROM (
                SELECT ? AS state, ? AS merchant_id, ? AS token, ? AS reply_to, ? AS correlation_id, ? AS status,
                    ? AS code, ? AS replayed, ? AS is_final, ? AS body, UTC_TIMESTAMP(3) AS created_at
                UNION ALL SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3)) owed
            """ + "WHERE " + OWED_BY_RECORD;

    /** The same question, for a command with no reply queue: nothing to write, only whether it is owed. */
    private static final String IS_OWED = "SELECT " + OWED_BY_RECORD + " AS owed";

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
            SELECT o.id, o.state, o.reply_to, o.correlation_id, o.status, o.code, o.replayed, o.is_final, o.body,
                o.send_attempts, t.response_status, t.response_body
            FROM queue_outbox o FORCE INDEX (ix_outbox_claim)
            LEFT JOIN idempotency_tokens t ON o.state = 'AWAITING' AND t.merchant_id = o.merchant_id AND t.token = o.token
            WHERE o.claimed_by = ? ORDER BY o.id""";

    private static final String DELETE_CLAIMED = "DELETE FROM queue_outbox WHERE claimed_by = ?";

    /**
     * Rows the broker returned as unroutable (the reply queue is missing, perhaps on a node that is down): still
     * owed, sent again after a backoff that doubles with each return, up to {@link #MAX_BACKOFF}.
     */
    private static final String BACK_OFF = """
            UPDATE queue_outbox SET claimed_by = NULL, send_attempts = send_attempts + 1,
                claimed_until = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL LEAST(? * POW(2, LEAST(send_attempts, 20)), ?) MICROSECOND)
            WHERE claimed_by = ? AND id IN (%s)""";

    private static final String RELEASE_CLAIMED = """
            UPDATE queue_outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ?""";

    private static final String BACKLOG = """
            SELECT state, COUNT(*) AS n,
                TIMESTAMPDIFF(MICROSECOND, MIN(created_at), UTC_TIMESTAMP(3)) AS oldest_us,
                SUM(send_attempts > 0) AS returned
            FROM queue_outbox GROUP BY state""";

    /**
     * AWAITING rows whose token can never complete: released (its record undone) or gone. Every owed answer is
     * written only once a record owes it ({@link #OWED_BY_RECORD}), so none should ever be counted here.
     */
    private static final String STRANDED = """
            SELECT COUNT(*) AS n FROM queue_outbox o
            WHERE o.state = 'AWAITING' AND NOT EXISTS (SELECT 1 FROM idempotency_tokens t
                WHERE t.merchant_id = o.merchant_id AND t.token = o.token AND t.state <> 'AVAILABLE')""";

    /** The first backoff of an unroutable answer, and the longest. */
    static final Duration FIRST_BACKOFF = Duration.ofSeconds(1);
    static final Duration MAX_BACKOFF = Duration.ofMinutes(5);

    /** One answer owed to a reply queue; {@code isFinal} as the contract's {@code final} header says it. */
    record Answer(String replyTo, String correlationId, int status, String code, boolean replayed, boolean isFinal,
            String body) {

        /** The answer of {@code status} and {@code body}, with the problem's {@code code} of a refusal. */
        static Answer of(String replyTo, String correlationId, int status, boolean replayed, boolean isFinal,
                String body) {
            return new Answer(replyTo, correlationId, status, status >= 400 ? Answers.codeOf(body) : null, replayed,
                    isFinal, body);
        }
    }

    /** A claimed row, as it is to be sent; {@code returned}: how often the broker returned it as unroutable. */
    record Claimed(long id, Answer answer, int returned) {
    }

    /**
     * The backlog: rows READY and AWAITING, the oldest READY row's age, rows the broker returned as unroutable
     * and still owed, and AWAITING rows whose token can never complete.
     */
    record Backlog(long ready, long awaiting, Optional<Duration> oldestReady, long returned, long stranded) {
    }

    private final Pool pool;
    private final Database db;

    Outbox(Pool pool, Database db) {
        this.pool = pool;
        this.db = db;
    }

    /** Owes {@code answer}, as it is, for the command of {@code merchantId}'s token. */
    Uni<Void> owe(String merchantId, String token, Answer answer) {
        return db.bounded(pool.preparedQuery(INSERT).execute(Tuple.from(row(READY, merchantId, token, answer))))
                .replaceWithVoid();
    }

    /**
     * Owes {@code now} at once and the token's final answer once it holds one, when a durable record owes that
     * answer ({@link #OWED_BY_RECORD}); true when it does (and the rows are written), false when nothing owes
     * it yet (nothing is written). {@code now} null: the command has no reply queue, and only the question is
     * asked.
     */
    Uni<Boolean> oweOnceRecorded(String merchantId, String token, Answer now) {
        if (now == null) {
            return db.bounded(pool.preparedQuery(IS_OWED).execute(Tuple.of(merchantId, token)))
                    .map(rows -> rows.iterator().next().getInteger("owed") == 1);
        }
        Answer pending = new Answer(now.replyTo(), now.correlationId(), 0, null, true, true, "");
        List<Object> values = new ArrayList<>(row(READY, merchantId, token, now));
        values.addAll(row(AWAITING, merchantId, token, pending));
        values.add(merchantId);
        values.add(token);
        return db.bounded(pool.preparedQuery(INSERT_OWED).execute(Tuple.from(values))).map(rows -> rows.rowCount() > 0);
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
                    rows.forEach(r -> out.add(new Claimed(r.getLong("id"), answerOf(r), r.getInteger("send_attempts"))));
                    return out;
                });
    }

    /** The claimed rows were sent: gone. */
    Uni<Void> sent(String claim) {
        return db.bounded(pool.preparedQuery(DELETE_CLAIMED).execute(Tuple.of(claim))).replaceWithVoid();
    }

    /**
     * The claimed rows were sent, but the broker returned those of {@code returnedIds} as unroutable: the others
     * are gone, those stay owed and are sent again after their backoff.
     */
    Uni<Void> sent(String claim, List<Long> returnedIds) {
        if (returnedIds.isEmpty()) {
            return sent(claim);
        }
        List<Object> values = new ArrayList<>(List.of(UtcTime.micros(FIRST_BACKOFF), UtcTime.micros(MAX_BACKOFF), claim));
        values.addAll(returnedIds);
        String sql = BACK_OFF.formatted(String.join(", ", Collections.nCopies(returnedIds.size(), "?")));
        return db.bounded(pool.preparedQuery(sql).execute(Tuple.from(values))).flatMap(backedOff -> sent(claim));
    }

    /** The claimed rows could not be sent: free for the next try, here or on another instance. */
    Uni<Void> release(String claim) {
        return db.bounded(pool.preparedQuery(RELEASE_CLAIMED).execute(Tuple.of(claim))).replaceWithVoid();
    }

    Uni<Backlog> backlog() {
        return db.bounded(pool.query(BACKLOG).execute()).flatMap(rows -> {
            long ready = 0;
            long awaiting = 0;
            long returned = 0;
            Optional<Duration> oldest = Optional.empty();
            for (Row r : rows) {
                returned += r.getLong("returned") == null ? 0 : r.getLong("returned");
                if (READY.equals(r.getString("state"))) {
                    ready = r.getLong("n");
                    Long micros = r.getLong("oldest_us");
                    oldest = Optional.ofNullable(micros).map(us -> Duration.ofNanos(Math.max(0, us) * 1_000));
                } else {
                    awaiting = r.getLong("n");
                }
            }
            long readyRows = ready;
            long awaitingRows = awaiting;
            long returnedRows = returned;
            Optional<Duration> oldestReady = oldest;
            return (awaitingRows == 0 ? Uni.createFrom().item(0L)
                    : db.bounded(pool.query(STRANDED).execute()).map(n -> n.iterator().next().getLong("n")))
                    .map(stranded -> new Backlog(readyRows, awaitingRows, oldestReady, returnedRows, stranded));
        });
    }

    private static List<Object> row(String state, String merchantId, String token, Answer answer) {
        return Arrays.asList(state, merchantId, token, answer.replyTo(), answer.correlationId(),
                answer.status(), answer.code(), answer.replayed() ? 1 : 0, answer.isFinal() ? 1 : 0, answer.body());
    }

    /** A READY row's own answer; an AWAITING row's is its token's final answer, sent as a replay. */
    private static Answer answerOf(Row r) {
        if (AWAITING.equals(r.getString("state"))) {
            return Answer.of(r.getString("reply_to"), r.getString("correlation_id"), r.getInteger("response_status"),
                    true, true, r.getString("response_body"));
        }
        return new Answer(r.getString("reply_to"), r.getString("correlation_id"), r.getInteger("status"),
                r.getString("code"), r.getInteger("replayed") != 0, r.getInteger("is_final") != 0, r.getString("body"));
    }
}
