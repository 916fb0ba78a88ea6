package io.payonce.support;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;

import io.payonce.support.TcpProxy.Inspector;
import io.payonce.support.TcpProxy.Piece;

/**
 * A loopback proxy in front of MariaDB that follows the MySQL protocol on every connection through it, so a
 * test can make one COMMIT reach the server late, make the answer to one COMMIT reach the client late, and
 * count the statements the service runs. Point the service's reactive datasource at {@link #port()}
 * ({@code QUARKUS_DATASOURCE_REACTIVE_URL=mysql://127.0.0.1:<port>/<db>}); Flyway's JDBC connection may go
 * direct.
 *
 * <h2>What a test does with it</h2>
 * <ul>
 * <li><b>An owner whose opening COMMIT's answer comes late.</b> {@code Hold hold =
 * proxy.holdNextCommitAnswer(Duration.ofSeconds(3))}, send the first copy of a request, then
 * {@code hold.awaitCaught(bound)}: from then on the opening transaction is committed (the token IN_PROGRESS
 * is visible to every other connection and instance) while its owner has not heard so and has not gone on
 * to the channel. Send the duplicates now; the owner goes on when {@link Hold#released()} completes.</li>
 * <li><b>A COMMIT that reaches the server late.</b> {@code Hold hold = proxy.holdNextCommit(d)}: the next
 * COMMIT is held for {@code d} before it is passed on. Until {@link Hold#released()}, the transaction's
 * writes are invisible to others and its row locks are held: a duplicate that arrives meanwhile reads no
 * claim, and its insert of the same key waits on the lock. Commands pipelined behind the COMMIT on its
 * connection wait with it.</li>
 * <li><b>A COMMIT that committed, answered with an error.</b> {@code Forgery forgery =
 * proxy.forgeNextCommitAnswer(1180, "HY000", "Got error 1 during COMMIT")}: the next COMMIT goes to the server,
 * which commits and answers OK; the client is told the error instead, in the same place of the conversation,
 * which goes on as usual. {@link Forgery#awaitServerAnswer} says what the server had answered.</li>
 * <li><b>The COMMIT of one kind of transaction answered late.</b> {@code proxy.holdNextCommitAnswerAfter(
 * "(?is)^\\s*DELETE\\b.*\\bFROM\\s+payments\\b", d)}: as above, for the next COMMIT of a transaction that ran a
 * matching statement; other transactions commit meanwhile as usual.</li>
 * <li><b>Statements refused.</b> {@code proxy.refuse("(?i)\\bqueue_outbox\\b", 1205)} until
 * {@link #stopRefusing()}: every matching statement is answered with that MySQL error instead of running
 * ({@link StatementRefusal}).</li>
 * <li><b>Counting reads while duplicates wait.</b> {@code StatementCount reads =
 * proxy.count("(?is)^\\s*SELECT\\b.*\\bidempotency_tokens\\b")} before 200 duplicates are sent on one key,
 * {@code reads.runs()} after: every time the service ran a matching statement, however it sent it (a
 * pattern is found anywhere in the text, so write it to exclude, say, a join that names the table). Assert
 * {@link #lostTrack()} is empty alongside, so the count is known to be exact.</li>
 * <li><b>Faults without the protocol.</b> {@link #cut()}, {@link #hang()} and {@link #restore()} as
 * {@link TcpProxy} has them. A hold longer than the test is a black hole on one connection: with
 * {@code holdNextCommitAnswer(Duration.ofMinutes(5))} the COMMIT executes, its connection stays open and
 * never says so; with {@code holdNextCommit(Duration.ofMinutes(5))} it never executes, the transaction stays
 * open holding its locks. {@link #close()} ends both.</li>
 * </ul>
 * "The next COMMIT" is the next one any connection sends after the hold is armed: a test arms a hold just
 * before the request whose COMMIT it means, while nothing else commits, and {@link #disarm()}s a hold its
 * COMMIT never came for.
 *
 * <h2>What it follows</h2>
 * Each direction is cut into packets (3-byte little-endian length, sequence id, payload; a payload of 16 MiB
 * or more spans several). A client packet with sequence id 0 is a command; the others belong to the
 * handshake or to a command already started. The server answers a connection's commands in the order they
 * were sent, pipelined or not, so the proxy keeps each connection's commands awaiting an answer in order and
 * walks each answer to its last packet (OK, ERR, a result set's columns and rows up to its closing EOF or OK,
 * more results while the server says more exist, a prepare's parameters and columns). A held answer is
 * therefore held from its own first byte: the answers to commands sent before the COMMIT still pass, those
 * after it wait behind it.
 *
 * <p>Prepared statements: the application's client caches them (Quarkus's default for MySQL and MariaDB),
 * so a statement is prepared once per connection and then executed by id, each execution a
 * {@code COM_STMT_EXECUTE} without its text. The proxy learns each id from the server's answer to its
 * prepare, and counts an execution against the text that was prepared; the prepare itself is counted
 * apart ({@link StatementCount#prepares()}), since it reads nothing.
 *
 * <p>TLS and compression cannot be followed: the proxy clears {@code CLIENT_SSL}, {@code CLIENT_COMPRESS}
 * (and zstd compression, query attributes, optional result-set metadata and MariaDB's extended capabilities,
 * which change the packets it reads) from the server's greeting, so a client that would use them does
 * without, and one that requires TLS fails to connect. The Vert.x client's ssl-mode is disabled unless
 * {@code quarkus.datasource.reactive.mysql.ssl-mode} says otherwise, and the application does not set it.
 * What it still cannot follow on a connection (a client that asks for TLS anyway, a cursor,
 * {@code LOAD DATA LOCAL}, {@code COM_CHANGE_USER}, an answer nobody asked for) is named in
 * {@link #lostTrack()}; from there that connection passes unchanged and its answers are not held.
 */
public final class MysqlProxy implements AutoCloseable {

    private static final int COM_QUIT = 0x01;
    private static final int COM_INIT_DB = 0x02;
    private static final int COM_QUERY = 0x03;
    private static final int COM_REFRESH = 0x07;
    private static final int COM_STATISTICS = 0x09;
    private static final int COM_PROCESS_KILL = 0x0c;
    private static final int COM_DEBUG = 0x0d;
    private static final int COM_PING = 0x0e;
    private static final int COM_STMT_PREPARE = 0x16;
    private static final int COM_STMT_EXECUTE = 0x17;
    private static final int COM_STMT_SEND_LONG_DATA = 0x18;
    private static final int COM_STMT_CLOSE = 0x19;
    private static final int COM_STMT_RESET = 0x1a;
    private static final int COM_SET_OPTION = 0x1b;
    private static final int COM_STMT_FETCH = 0x1c;
    private static final int COM_RESET_CONNECTION = 0x1f;

    private static final int OK = 0x00;
    private static final int LOCAL_INFILE = 0xfb;
    private static final int EOF = 0xfe;
    private static final int ERR = 0xff;

    /** In a greeting from MySQL; a MariaDB server leaves it clear and puts its extended capabilities in the filler. */
    private static final long CLIENT_MYSQL = 1;
    private static final long CLIENT_COMPRESS = 0x20;
    private static final long CLIENT_PROTOCOL_41 = 0x200;
    private static final long CLIENT_SSL = 0x800;
    private static final long CLIENT_DEPRECATE_EOF = 1L << 24;
    private static final long CLIENT_OPTIONAL_RESULTSET_METADATA = 1L << 25;
    private static final long CLIENT_ZSTD_COMPRESSION = 1L << 26;
    private static final long CLIENT_QUERY_ATTRIBUTES = 1L << 27;
    private static final long UNFOLLOWABLE = CLIENT_COMPRESS | CLIENT_SSL | CLIENT_OPTIONAL_RESULTSET_METADATA
            | CLIENT_ZSTD_COMPRESSION | CLIENT_QUERY_ATTRIBUTES;
    private static final int SERVER_MORE_RESULTS_EXIST = 0x08;
    /** A payload this long continues in the next packet. */
    private static final int MAX_PACKET = 0xffffff;
    /** A statement id that stands for the statement prepared last on the connection (MariaDB's direct execute). */
    private static final long LAST_PREPARED = 0xffffffffL;

    /** COMMIT as the Vert.x client and the MariaDB driver send it. */
    private static final Pattern COMMIT = Pattern.compile("\\s*COMMIT(\\s+WORK)?\\s*;?\\s*", Pattern.CASE_INSENSITIVE);
    /** The other statements that begin or end a transaction. */
    private static final Pattern BEGIN_OR_ROLLBACK = Pattern.compile(
            "\\s*(BEGIN|START\\s+TRANSACTION|ROLLBACK)\\b.*", Pattern.CASE_INSENSITIVE | Pattern.DOTALL);

    private final TcpProxy tcp;
    private final AtomicInteger connections = new AtomicInteger();
    /** The open connections. */
    private final Set<Conversation> conversations = ConcurrentHashMap.newKeySet();
    private final AtomicReference<Hold> commitHold = new AtomicReference<>();
    private final AtomicReference<Hold> answerHold = new AtomicReference<>();
    private final AtomicReference<Forgery> answerForgery = new AtomicReference<>();
    private final AtomicReference<StatementRefusal> refusal = new AtomicReference<>();
    private final List<StatementCount> counts = new CopyOnWriteArrayList<>();
    private final List<String> lostTrack = new CopyOnWriteArrayList<>();

    /** A proxy in front of the MariaDB (or MySQL) server on {@code serverPort} of this machine. */
    public MysqlProxy(int serverPort) throws IOException {
        this.tcp = new TcpProxy(serverPort, () -> {
            Conversation conversation = new Conversation(connections.incrementAndGet());
            conversations.add(conversation);
            return conversation;
        });
    }

    public int port() {
        return tcp.port();
    }

    /**
     * The next COMMIT sent on any connection is held for {@code length}, then passed on to the server; commands
     * sent behind it on its connection wait with it.
     */
    public Hold holdNextCommit(Duration length) {
        Hold hold = new Hold(length);
        commitHold.set(hold);
        return hold;
    }

    /**
     * The next COMMIT sent on any connection goes to the server at once; the server's answer to it, and
     * whatever the server sends after it on that connection, reach the client {@code length} after the server
     * gave it. Answers to commands sent before the COMMIT are not held.
     */
    public Hold holdNextCommitAnswer(Duration length) {
        Hold hold = new Hold(length);
        answerHold.set(hold);
        return hold;
    }

    /**
     * The next COMMIT sent on any connection goes to the server at once; its client gets an error packet with
     * {@code code}, {@code sqlState} and {@code message} in place of the server's answer to it.
     */
    public Forgery forgeNextCommitAnswer(int code, String sqlState, String message) {
        Forgery forgery = new Forgery(error(code, sqlState, message));
        answerForgery.set(forgery);
        return forgery;
    }

    /**
     * As {@link #holdNextCommitAnswer}, for the next COMMIT of a transaction that ran a statement whose text has a
     * match for {@code regex} (say the one statement of an undo): the COMMITs of other transactions pass.
     */
    public Hold holdNextCommitAnswerAfter(String regex, Duration length) {
        Hold hold = new Hold(length, Pattern.compile(regex));
        answerHold.set(hold);
        return hold;
    }

    /**
     * From now until {@link #stopRefusing()}, every statement run on any connection whose text has a match for
     * {@code regex} is refused: it never reaches the server, and its client gets the MySQL error {@code code}
     * (SQLSTATE HY000) in its place, as from a server that gave up on it ({@code 1205}, a lock wait timeout).
     * Prepares pass (they run nothing), and so does a COMMIT. See {@link StatementRefusal}.
     */
    public void refuse(String regex, int code) {
        refusal.set(new StatementRefusal(regex, code));
    }

    /** Statements are passed on again; answers how many the refusal in force refused (0 when none was). */
    public int stopRefusing() {
        StatementRefusal stopped = refusal.getAndSet(null);
        return stopped == null ? 0 : stopped.refused();
    }

    /** Forgets the holds and the forgery armed and not yet caught; a hold already under way runs its length. */
    public void disarm() {
        commitHold.set(null);
        answerHold.set(null);
        answerForgery.set(null);
    }

    /**
     * Counts, from now on, the statements sent on any connection whose SQL text has a match for {@code regex}
     * ({@link java.util.regex.Matcher#find()}; flags inline, as {@code (?is)}).
     */
    public StatementCount count(String regex) {
        StatementCount count = new StatementCount(Pattern.compile(regex));
        counts.add(count);
        return count;
    }

    /**
     * What the proxy could not follow, a line for each connection and reason; while it is empty, every hold
     * caught what it was armed for and every count is exact.
     */
    public List<String> lostTrack() {
        return List.copyOf(lostTrack);
    }

    /**
     * Commands sent on open, followed connections whose answers have not all come back: none once every client
     * has its answers, unless the proxy misread where an answer ends.
     */
    int awaitingAnswers() {
        return conversations.stream().filter(c -> !c.answersLost).mapToInt(Conversation::awaiting).sum();
    }

    /** As {@link TcpProxy#pointAt(int)}. */
    public void pointAt(int serverPort) {
        tcp.pointAt(serverPort);
    }

    /** As {@link TcpProxy#cut()}. */
    public void cut() {
        tcp.cut();
    }

    /** As {@link TcpProxy#hang()}. */
    public void hang() {
        tcp.hang();
    }

    /** As {@link TcpProxy#restore()}. */
    public void restore() {
        tcp.restore();
    }

    @Override
    public void close() {
        tcp.close();
    }

    /**
     * A COMMIT (or its answer) to be held, or held: {@link #caught()} completes when the proxy has it in hand and
     * starts holding it, {@link #released()} once it has been passed on.
     */
    public static final class Hold {
        private final Duration length;
        /** What the held COMMIT's transaction must have run, or null for any COMMIT. */
        private final Pattern after;
        private final CompletableFuture<Void> caught = new CompletableFuture<>();
        private final CompletableFuture<Void> released = new CompletableFuture<>();

        private Hold(Duration length) {
            this(length, null);
        }

        private Hold(Duration length, Pattern after) {
            this.length = length;
            this.after = after;
        }

        public Duration length() {
            return length;
        }

        /**
         * Completes when the COMMIT is held (for {@link #holdNextCommit}: it has not reached the server) or its
         * answer is held (for {@link #holdNextCommitAnswer}: the transaction is committed, its client does not
         * know yet).
         */
        public CompletableFuture<Void> caught() {
            return caught;
        }

        /** Completes when what was held has been passed on: the COMMIT to the server, or the answer to the client. */
        public CompletableFuture<Void> released() {
            return released;
        }

        /** Returns once the hold has begun; fails the test if it has not within {@code bound}. */
        public void awaitCaught(Duration bound) {
            awaitWithin(caught, bound, "a COMMIT to be caught");
        }

        private void begin() {
            caught.complete(null);
        }
    }

    /** An answer to a COMMIT to be replaced with an error, or replaced. */
    public static final class Forgery {
        private final byte[] errorPayload;
        /** Completes, once the error has taken the server answer's place, with that answer: OK, or ERR and its code. */
        private final CompletableFuture<String> serverAnswer = new CompletableFuture<>();

        private Forgery(byte[] errorPayload) {
            this.errorPayload = errorPayload;
        }

        /**
         * What the server had answered the COMMIT whose answer was replaced: {@code OK}, or {@code ERR} and its
         * code; fails the test if none was replaced within {@code bound}.
         */
        public String awaitServerAnswer(Duration bound) {
            return awaitWithin(serverAnswer, bound, "a COMMIT's answer to be replaced");
        }
    }

    /** What {@code future} completes with; fails the test if it has not within {@code bound}. */
    private static <T> T awaitWithin(CompletableFuture<T> future, Duration bound, String what) {
        try {
            return future.get(bound.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("waited " + bound + " for " + what + " in vain", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting for " + what, e);
        } catch (ExecutionException e) {
            throw new AssertionError(e);
        }
    }

    /** The statements whose SQL text matches a pattern, counted from when the count was opened. */
    public static final class StatementCount {
        private final Pattern pattern;
        private final AtomicInteger runs = new AtomicInteger();
        private final AtomicInteger prepares = new AtomicInteger();

        private StatementCount(Pattern pattern) {
            this.pattern = pattern;
        }

        /** Matching statements run: sent as text ({@code COM_QUERY}), or executed once prepared from matching text. */
        public int runs() {
            return runs.get();
        }

        /** Matching statements prepared ({@code COM_STMT_PREPARE}); with the client's cache, once per connection. */
        public int prepares() {
            return prepares.get();
        }

        private void sent(String sql, boolean run) {
            if (pattern.matcher(sql).find()) {
                (run ? runs : prepares).incrementAndGet();
            }
        }

        @Override
        public String toString() {
            return runs() + " run(s), " + prepares() + " prepare(s) of /" + pattern + "/";
        }
    }

    private enum Answer {
        /** An OK, an ERR, or a result set; more of them while the server says more results exist. */
        RESULT,
        /** A prepare's OK with its parameter and column definitions, or an ERR. */
        PREPARE,
        /** Rows up to an EOF or OK, as a cursor's fetch answers. */
        ROWS,
        /** One packet. */
        ONE
    }

    private enum Phase {
        RESULT, COLUMNS, COLUMNS_EOF, ROWS, PREPARE, DEFINITIONS, ONE
    }

    /**
     * A command awaiting its answer: the text a prepare prepares, the hold to put on the answer, and the forgery
     * to put in its place, if any.
     */
    private record Command(Answer answer, String sql, Hold heldAnswer, Forgery forgedAnswer) {

        Command(Answer answer, String sql) {
            this(answer, sql, null, null);
        }
    }

    /**
     * How one read goes on: one packet of it replaced (the first forgery caught in the read), and the rest
     * from a point on held (the first hold caught in the read).
     */
    private static final class Split {
        private int at;
        private Hold hold;
        private int replacedFrom;
        private int replacedTo;
        private byte[] replacement;

        void holdFrom(int offset, Hold caught) {
            if (hold == null) {
                at = offset;
                hold = caught;
                caught.begin();
            }
        }

        /** Bytes {@code from} to {@code to} of the read (one whole packet) are written as {@code packet}. */
        void replace(int from, int to, byte[] packet) {
            if (replacement == null) {
                replacedFrom = from;
                replacedTo = to;
                replacement = packet;
            }
        }

        List<Piece> pieces(byte[] read) {
            byte[] bytes = read;
            int heldFrom = at;
            if (replacement != null) {
                ByteArrayOutputStream replaced = new ByteArrayOutputStream();
                replaced.write(read, 0, replacedFrom);
                replaced.writeBytes(replacement);
                replaced.write(read, replacedTo, read.length - replacedTo);
                bytes = replaced.toByteArray();
                // a hold begins at a packet: at the replaced one or before it, or after it, shifted
                if (heldFrom >= replacedTo) {
                    heldFrom += replacement.length - (replacedTo - replacedFrom);
                }
            }
            if (hold == null) {
                return whole(bytes);
            }
            Piece held = new Piece(Arrays.copyOfRange(bytes, heldFrom, bytes.length), hold.length.toNanos(),
                    () -> hold.released.complete(null));
            return heldFrom == 0 ? List.of(held)
                    : List.of(new Piece(Arrays.copyOf(bytes, heldFrom), 0, Piece.NOTHING), held);
        }
    }

    private static List<Piece> whole(byte[] bytes) {
        return List.of(new Piece(bytes, 0, Piece.NOTHING));
    }

    /** One connection: the client's commands, and the server's answers walked in the same order. */
    private final class Conversation implements Inspector {
        private final int number;
        private final Framer fromClient = new Framer();
        private final Framer fromServer = new Framer();
        private final Queue<Command> awaiting = new ConcurrentLinkedQueue<>();
        /** The text each statement id prepared on this connection stands for. */
        private final Map<Long, String> prepared = new ConcurrentHashMap<>();
        /** How many parameters each statement id prepared on this connection has. */
        private final Map<Long, Integer> parameters = new ConcurrentHashMap<>();
        private volatile long serverCapabilities;
        private volatile long clientCapabilities;
        private volatile boolean commandsLost;
        private volatile boolean answersLost;
        /** The answer being walked; set and read by the server's direction, looked at by tests. */
        private volatile Command answering;
        // the client's direction only
        private boolean handshakeSent;
        private String lastPrepared;
        /** The read being cut into commands, and the refused statements' substitutions in it. */
        private byte[] reading;
        private final List<StatementRefusal.Substitution> substitutions = new ArrayList<>();
        /** The parameter types refused executions carried, by statement id: the server has not had them. */
        private final Map<Long, byte[]> typesOwed = new HashMap<>();
        /** The conditional answer hold a statement of the open transaction matched, if any. */
        private Hold matched;
        // the server's direction only
        private ByteArrayOutputStream greeting = new ByteArrayOutputStream();
        private boolean authenticated;
        private Phase phase;
        private int packetsLeft;

        Conversation(int number) {
            this.number = number;
        }

        int awaiting() {
            return awaiting.size() + (answering == null ? 0 : 1);
        }

        @Override
        public void closed() {
            conversations.remove(this);
        }

        @Override
        public List<Piece> read(boolean towardsServer, byte[] bytes) {
            try {
                return towardsServer ? fromClient(bytes) : fromServer(bytes);
            } catch (RuntimeException e) {
                lose("unreadable bytes " + (towardsServer ? "from the client" : "from the server") + ": " + e, true);
                return whole(bytes);
            }
        }

        private List<Piece> fromClient(byte[] bytes) {
            if (commandsLost) {
                return whole(bytes);
            }
            Split split = new Split();
            reading = bytes;
            substitutions.clear();
            fromClient.feed(bytes, 0, (seq, payload, start, end) -> {
                if (!handshakeSent) {
                    handshakeSent = true;
                    handshakeResponse(payload);
                } else if (seq == 0) {
                    command(payload, start, split);
                }
            });
            return StatementRefusal.substitute(split.pieces(bytes), substitutions);
        }

        private void handshakeResponse(byte[] payload) {
            long capabilities = int2(payload, 0);
            if ((capabilities & CLIENT_PROTOCOL_41) == 0) {
                lose("the client speaks a protocol older than 4.1", true);
                return;
            }
            capabilities = int4(payload, 0);
            clientCapabilities = capabilities;
            if ((capabilities & CLIENT_SSL) != 0) {
                lose("the client asked for TLS", true);
            } else if ((capabilities & UNFOLLOWABLE) != 0) {
                lose("the client asked for capabilities 0x" + Long.toHexString(capabilities & UNFOLLOWABLE), true);
            }
        }

        private void command(byte[] payload, int start, Split split) {
            int code = payload[0] & 0xff;
            switch (code) {
                case COM_QUERY -> {
                    String sql = text(payload);
                    run(sql, payload, start);
                    Hold heldAnswer = null;
                    Forgery forgedAnswer = null;
                    if (COMMIT.matcher(sql).matches()) {
                        Hold held = commitHold.getAndSet(null);
                        if (held != null) {
                            split.holdFrom(start, held);
                        }
                        heldAnswer = answersLost ? null : takeAnswerHold();
                        forgedAnswer = answersLost ? null : answerForgery.getAndSet(null);
                    }
                    await(new Command(Answer.RESULT, null, heldAnswer, forgedAnswer));
                }
                case COM_STMT_PREPARE -> {
                    String sql = text(payload);
                    sent(sql, false);
                    lastPrepared = sql;
                    await(new Command(Answer.PREPARE, sql));
                }
                case COM_STMT_EXECUTE -> {
                    long id = int4(payload, 1);
                    String sql = id == LAST_PREPARED ? lastPrepared : prepared.get(id);
                    if (sql == null) {
                        lostTrack.add("connection " + number + ": statement " + id + " executed, its text unknown");
                    } else {
                        run(sql, payload, start);
                    }
                    if (payload[5] != 0) {
                        lose("a cursor was opened", false);
                    }
                    await(new Command(Answer.RESULT, null));
                }
                case COM_STMT_FETCH -> await(new Command(Answer.ROWS, null));
                case COM_STMT_CLOSE -> prepared.remove(int4(payload, 1));
                case COM_STMT_SEND_LONG_DATA, COM_QUIT -> {
                    // the server does not answer these
                }
                case COM_RESET_CONNECTION -> {
                    prepared.clear();
                    await(new Command(Answer.ONE, null));
                }
                case COM_INIT_DB, COM_REFRESH, COM_STATISTICS, COM_PROCESS_KILL, COM_DEBUG, COM_PING, COM_STMT_RESET,
                        COM_SET_OPTION -> await(new Command(Answer.ONE, null));
                default -> lose(String.format("command 0x%02x", code), false);
            }
        }

        private void sent(String sql, boolean run) {
            counts.forEach(count -> count.sent(sql, run));
        }

        /**
         * A statement sent to run, its packet at {@code start} of the read: refused when a refusal in force matches
         * it (it then counts as never run), else counted, and noted by a conditional answer hold it matches.
         */
        private void run(String sql, byte[] payload, int start) {
            StatementRefusal refusing = refusal.get();
            StatementRefusal.Substitution refused = refusing == null || COMMIT.matcher(sql).matches() ? null
                    : refusing.of(sql, reading, start, payload);
            boolean execution = (payload[0] & 0xff) == COM_STMT_EXECUTE;
            long id = execution ? int4(payload, 1) : -1;
            int count = parameters.getOrDefault(id, 0);
            if (refused != null) {
                substitutions.add(refused);
                byte[] types = execution ? StatementRefusal.typesCarried(payload, count) : null;
                if (types != null) {
                    typesOwed.put(id, types);
                }
                return;
            }
            byte[] owed = execution ? typesOwed.remove(id) : null;
            if (owed != null && StatementRefusal.typesCarried(payload, count) == null) {
                StatementRefusal.Substitution retyped = StatementRefusal.retyped(reading, start, payload, count, owed);
                if (retyped != null) {
                    substitutions.add(retyped);
                } else {
                    lostTrack.add("connection " + number + ": statement " + id
                            + " executed without the types its refused execution carried");
                }
            }
            sent(sql, true);
            Hold armed = answerHold.get();
            if (armed != null && armed.after != null && armed.after.matcher(sql).find()) {
                matched = armed;
            } else if (BEGIN_OR_ROLLBACK.matcher(sql).matches()) {
                matched = null;
            }
        }

        /** The answer hold this COMMIT takes: an unconditional one, or one a statement of its transaction matched. */
        private Hold takeAnswerHold() {
            Hold armed = answerHold.get();
            boolean fits = armed != null && (armed.after == null || armed == matched);
            matched = null;
            return fits && answerHold.compareAndSet(armed, null) ? armed : null;
        }

        private void await(Command command) {
            if (!answersLost) {
                awaiting.add(command);
            }
        }

        private List<Piece> fromServer(byte[] bytes) {
            if (answersLost) {
                return whole(bytes);
            }
            int from = 0;
            if (greeting != null) {
                // the greeting is rewritten before the client sees any of it, so it is gathered whole first
                greeting.writeBytes(bytes);
                byte[] gathered = greeting.toByteArray();
                if (gathered.length < 4 || gathered.length < 4 + int3(gathered, 0)) {
                    return List.of();
                }
                greeting = null;
                bytes = gathered;
                from = 4 + int3(gathered, 0);
                try {
                    greet(bytes, from);
                } catch (RuntimeException e) {
                    lose("an unreadable greeting: " + e, true);
                    return whole(bytes);
                }
            }
            Split split = new Split();
            fromServer.feed(bytes, from, (seq, payload, start, end) -> answer(seq, payload, start, end, split));
            return split.pieces(bytes);
        }

        /** Clears, in the greeting's bytes, the capabilities whose packets the proxy could not read. */
        private void greet(byte[] bytes, int end) {
            int i = 4;
            if (bytes[i] != 10) {
                lose("the server's greeting is not protocol 10 but 0x" + Integer.toHexString(bytes[i] & 0xff), true);
                return;
            }
            i++;
            while (bytes[i] != 0) {
                i++; // the server's version
            }
            int low = i + 1 + 4 + 8 + 1; // after the version's NUL, the connection id, a scramble and a filler
            clear(bytes, low, UNFOLLOWABLE);
            long capabilities = int2(bytes, low);
            int high = low + 2 + 1 + 2; // after the character set and the status
            if (high + 2 <= end) {
                clear(bytes, high, UNFOLLOWABLE >>> 16);
                capabilities |= int2(bytes, high) << 16;
                int extended = high + 2 + 1 + 6; // after the scramble's length and six reserved bytes
                if ((capabilities & CLIENT_MYSQL) == 0 && extended + 4 <= end) {
                    Arrays.fill(bytes, extended, extended + 4, (byte) 0);
                }
            }
            serverCapabilities = capabilities;
        }

        private void answer(int seq, byte[] payload, int start, int end, Split split) {
            if (answersLost) {
                return;
            }
            if (!authenticated) {
                // the handshake's exchange ends with an OK (or an ERR, and the connection with it)
                authenticated = (payload[0] & 0xff) == OK;
                return;
            }
            Command command = answering;
            if (command == null) {
                command = awaiting.poll();
                if (command == null) {
                    lose("an answer to no command, 0x" + Integer.toHexString(payload[0] & 0xff), false);
                    return;
                }
                answering = command;
                phase = switch (command.answer()) {
                    case RESULT -> Phase.RESULT;
                    case PREPARE -> Phase.PREPARE;
                    case ROWS -> Phase.ROWS;
                    case ONE -> Phase.ONE;
                };
                if (command.heldAnswer() != null) {
                    split.holdFrom(start, command.heldAnswer());
                }
                if (command.forgedAnswer() != null) {
                    forge(command.forgedAnswer(), seq, payload, start, end, split);
                }
            }
            if (walk(payload, command)) {
                answering = null;
            }
        }

        /**
         * Puts the forgery's error in place of the server's one-packet answer to a COMMIT, which must have come
         * whole in this read: its first bytes cannot be taken back once written.
         */
        private void forge(Forgery forgery, int seq, byte[] payload, int start, int end, Split split) {
            int header = payload[0] & 0xff;
            if (header != OK && header != ERR) {
                lostTrack.add("connection " + number + ": a COMMIT answered 0x" + Integer.toHexString(header)
                        + ", not forged");
                return;
            }
            if (end - start != 4 + payload.length) {
                lostTrack.add("connection " + number + ": a COMMIT's answer split between reads, not forged");
                return;
            }
            split.replace(start, end, packet(seq, forgery.errorPayload));
            forgery.serverAnswer.complete(header == OK ? "OK" : "ERR " + int2(payload, 1));
        }

        /** Takes the next packet of the answer to {@code command}; true if it was the last. */
        private boolean walk(byte[] payload, Command command) {
            int header = payload[0] & 0xff;
            switch (phase) {
                case ONE -> {
                    return true;
                }
                case RESULT -> {
                    if (header == OK) {
                        return !moreResults(okStatus(payload));
                    }
                    if (header == ERR) {
                        return true;
                    }
                    if (header == LOCAL_INFILE) {
                        lose("LOAD DATA LOCAL", false);
                        return true;
                    }
                    packetsLeft = (int) lenenc(payload, 0);
                    phase = Phase.COLUMNS;
                    return false;
                }
                case COLUMNS -> {
                    if (--packetsLeft == 0) {
                        phase = eofDeprecated() ? Phase.ROWS : Phase.COLUMNS_EOF;
                    }
                    return false;
                }
                case COLUMNS_EOF -> {
                    phase = Phase.ROWS;
                    return false;
                }
                case ROWS -> {
                    if (header == ERR) {
                        return true;
                    }
                    // a row starts with 0xfe only when its first value is 16 MiB long or more
                    if (header == EOF && payload.length < MAX_PACKET) {
                        if (moreResults(eofDeprecated() ? okStatus(payload) : int2(payload, 3))) {
                            phase = Phase.RESULT;
                            return false;
                        }
                        return true;
                    }
                    return false;
                }
                case PREPARE -> {
                    if (header != OK) {
                        return true;
                    }
                    prepared.put(int4(payload, 1), command.sql());
                    int columns = (int) int2(payload, 5);
                    int parameters = (int) int2(payload, 7);
                    this.parameters.put(int4(payload, 1), parameters);
                    packetsLeft = columns + parameters;
                    if (!eofDeprecated()) {
                        packetsLeft += (columns > 0 ? 1 : 0) + (parameters > 0 ? 1 : 0);
                    }
                    phase = Phase.DEFINITIONS;
                    return packetsLeft == 0;
                }
                case DEFINITIONS -> {
                    return --packetsLeft == 0;
                }
                default -> throw new IllegalStateException(phase.name());
            }
        }

        private boolean eofDeprecated() {
            return (clientCapabilities & serverCapabilities & CLIENT_DEPRECATE_EOF) != 0;
        }

        /** From here on, this connection's answers (and, if {@code commands}, its commands too) pass unread. */
        private void lose(String why, boolean commands) {
            lostTrack.add("connection " + number + ": " + why);
            answersLost = true;
            awaiting.clear();
            answering = null;
            if (commands) {
                commandsLost = true;
                fromClient.stop();
                fromServer.stop();
            }
        }
    }

    /**
     * Receives each whole packet: its sequence id, its payload, and the offsets in the read where it began and
     * where it ended.
     */
    @FunctionalInterface
    private interface PacketSink {
        void packet(int seq, byte[] payload, int start, int end);
    }

    /**
     * Cuts one direction's bytes into packets, which may straddle reads; a payload split into maximal packets
     * comes out whole. A packet that began in an earlier read is said to begin where this read's bytes do.
     */
    private static final class Framer {
        private final byte[] header = new byte[4];
        private int headerFilled;
        private byte[] payload;
        private int payloadFilled;
        /** The parts of a payload that continues, gathered until its last packet. */
        private ByteArrayOutputStream continued;
        private int firstSeq;
        private volatile boolean stopped;

        void stop() {
            stopped = true;
        }

        void feed(byte[] bytes, int from, PacketSink sink) {
            int start = from;
            int i = from;
            while (i < bytes.length && !stopped) {
                if (payload == null) {
                    if (headerFilled == 0 && continued == null) {
                        start = i;
                    }
                    int n = Math.min(4 - headerFilled, bytes.length - i);
                    System.arraycopy(bytes, i, header, headerFilled, n);
                    headerFilled += n;
                    i += n;
                    if (headerFilled < 4) {
                        return;
                    }
                    payload = new byte[int3(header, 0)];
                    payloadFilled = 0;
                    if (continued == null) {
                        firstSeq = header[3] & 0xff;
                    }
                }
                int n = Math.min(payload.length - payloadFilled, bytes.length - i);
                System.arraycopy(bytes, i, payload, payloadFilled, n);
                payloadFilled += n;
                i += n;
                if (payloadFilled < payload.length) {
                    return;
                }
                byte[] packet = payload;
                payload = null;
                headerFilled = 0;
                if (packet.length == MAX_PACKET) {
                    if (continued == null) {
                        continued = new ByteArrayOutputStream();
                    }
                    continued.writeBytes(packet);
                    continue;
                }
                if (continued != null) {
                    continued.writeBytes(packet);
                    packet = continued.toByteArray();
                    continued = null;
                }
                sink.packet(firstSeq, packet, start, i);
            }
        }
    }

    /** An error packet's payload as a 4.1 server sends it: the code, the SQL state and the message. */
    private static byte[] error(int code, String sqlState, String message) {
        if (sqlState.length() != 5) {
            throw new IllegalArgumentException("an SQL state has five characters: " + sqlState);
        }
        ByteArrayOutputStream payload = new ByteArrayOutputStream();
        payload.write(ERR);
        payload.write(code & 0xff);
        payload.write(code >>> 8 & 0xff);
        payload.writeBytes(("#" + sqlState + message).getBytes(StandardCharsets.UTF_8));
        return payload.toByteArray();
    }

    /** {@code payload} as one packet with sequence id {@code seq}. */
    private static byte[] packet(int seq, byte[] payload) {
        byte[] packet = new byte[4 + payload.length];
        packet[0] = (byte) payload.length;
        packet[1] = (byte) (payload.length >>> 8);
        packet[2] = (byte) (payload.length >>> 16);
        packet[3] = (byte) seq;
        System.arraycopy(payload, 0, packet, 4, payload.length);
        return packet;
    }

    private static String text(byte[] payload) {
        return new String(payload, 1, payload.length - 1, StandardCharsets.UTF_8);
    }

    private static boolean moreResults(long status) {
        return (status & SERVER_MORE_RESULTS_EXIST) != 0;
    }

    /** The status flags of an OK packet (or an EOF sent as one): after its header, affected rows and last id. */
    private static long okStatus(byte[] payload) {
        int i = 1;
        i += lenencSize(payload, i);
        i += lenencSize(payload, i);
        return int2(payload, i);
    }

    private static long lenenc(byte[] bytes, int at) {
        int first = bytes[at] & 0xff;
        return switch (first) {
            case 0xfc -> int2(bytes, at + 1);
            case 0xfd -> int3(bytes, at + 1);
            case 0xfe -> littleEndian(bytes, at + 1, 8);
            default -> first;
        };
    }

    private static int lenencSize(byte[] bytes, int at) {
        return switch (bytes[at] & 0xff) {
            case 0xfc -> 3;
            case 0xfd -> 4;
            case 0xfe -> 9;
            default -> 1;
        };
    }

    private static long int2(byte[] bytes, int at) {
        return littleEndian(bytes, at, 2);
    }

    private static int int3(byte[] bytes, int at) {
        return (int) littleEndian(bytes, at, 3);
    }

    private static long int4(byte[] bytes, int at) {
        return littleEndian(bytes, at, 4);
    }

    private static long littleEndian(byte[] bytes, int at, int length) {
        long value = 0;
        for (int i = length - 1; i >= 0; i--) {
            value = value << 8 | bytes[at + i] & 0xff;
        }
        return value;
    }

    /** Clears {@code bits} in the two-byte little-endian field at {@code at}. */
    private static void clear(byte[] bytes, int at, long bits) {
        bytes[at] &= (byte) ~bits;
        bytes[at + 1] &= (byte) ~(bits >>> 8);
    }
}
