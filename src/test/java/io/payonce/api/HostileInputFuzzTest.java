package io.payonce.api;

import static io.payonce.support.Fixtures.AMOUNT;
import static io.payonce.support.Fixtures.as;
import static io.payonce.support.Fixtures.id;
import static io.payonce.support.Fixtures.payBody;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import jakarta.inject.Inject;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.payonce.api.HostileInputGenerator.Case;
import io.payonce.api.HostileInputGenerator.Expected;
import io.payonce.api.HostileInputGenerator.Parts;
import io.payonce.api.HostileInputGenerator.Targets;
import io.payonce.support.Fixtures;
import io.payonce.support.TestDatabase;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;

/**
 * The HTTP and JSON layer as an attacker finds it: hostile variants of valid requests to every endpoint
 * ({@link HostileInputGenerator}: malformed, oversized, deeply nested, oddly encoded and type-confused
 * bodies, headers, paths and framing), generated from a seed and sent byte for byte over raw sockets. Each
 * must get, within {@link #ANSWER_TIMEOUT_MS}, a 4xx problem+json whose {@code status} is the HTTP status
 * and whose {@code code} is set, or, where the case kept its request valid, the request's correct answer;
 * and no case may write a row, consume a token or change a merchant's sandbox behaviour, which is checked
 * after every case and once more at the end, when every token the cases used still pays.
 * <p>
 * Every failure names the seed with its case number and the exact bytes sent. Rerun a
 * seed with {@code -Dfuzz.seed=<seed>}, one case of it with {@code -Dfuzz.case=<n>} as well; try a new one
 * with {@code -Dfuzz.seed=random}; run longer with {@code -Dfuzz.cases=<n>} and {@code -Dfuzz.seconds=<s>}.
 */
@QuarkusTest
class HostileInputFuzzTest {

    /** The sandbox keeps a behaviour per merchant for each of these. */
    private static final List<String> SANDBOX_OPERATIONS = List.of("charge", "refund");

    private static final String MERCHANT = "merchant_fuzz";
    private static final String OTHER_MERCHANT = "merchant_fuzz_other";
    /** Every merchant a case can name validly starts so; rows under any of them are watched. */
    private static final String MERCHANTS_LIKE = "merchant_fuzz%";
    /** A fixed default, so that the ordinary run is the same run every time. */
    private static final long DEFAULT_SEED = 0x5EED_0021L;
    private static final int DEFAULT_CASES = 600;
    private static final int DEFAULT_SECONDS = 40;
    private static final int ANSWER_TIMEOUT_MS = 10_000;
    private static final int TOKENS = 3;
    private static final int KINDS_REPORTED = 30;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One row per line, of every table a request could write, for the merchants the cases name. */
    private static final String ROWS = """
            SELECT CONCAT('order ', merchant_id, ' ', order_no, ' ', status, ' v', version) FROM orders
              WHERE merchant_id LIKE ?
            UNION ALL SELECT CONCAT('payment ', merchant_id, ' ', request_no, ' ', status) FROM payments
              WHERE merchant_id LIKE ?
            UNION ALL SELECT CONCAT('token ', merchant_id, ' ', token, ' ', state) FROM idempotency_tokens
              WHERE merchant_id LIKE ?
            UNION ALL SELECT CONCAT('sandbox charge ', merchant_id, ' ', request_no, ' ', status) FROM sandbox_charges
              WHERE merchant_id LIKE ?
            UNION ALL SELECT CONCAT('sandbox attempts ', merchant_id, ' ', order_no, ' ', attempts) FROM sandbox_attempts
              WHERE merchant_id LIKE ?""";

    @Inject
    TestDatabase db;

    @Inject
    Pool pool;

    @TestHTTPResource("/")
    URL app;

    private ScheduledExecutorService cutoffs;
    private int ordersMade;
    /** What the cases are built on: replaced when a case used up a token or an order. */
    private Targets targets;
    /** The watched rows as they must stay. */
    private List<String> rows;

    @BeforeEach
    void clean() {
        db.clean();
        cutoffs = Executors.newSingleThreadScheduledExecutor();
    }

    @AfterEach
    void stopCutoffs() {
        cutoffs.shutdownNow();
    }

    @Test
    void hostileRequests_getA4xxProblemOrTheirCorrectAnswer_andChangeNothing() {
        long seed = seed();
        int cases = Integer.getInteger("fuzz.cases", DEFAULT_CASES);
        Integer only = Integer.getInteger("fuzz.case");
        int seconds = Integer.getInteger("fuzz.seconds", DEFAULT_SECONDS);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        targets = targets();
        rows = rows();
        Findings findings = new Findings(seed);

        for (int n = only != null ? only : 0; n < (only != null ? only + 1 : cases) && System.nanoTime() < deadline; n++) {
            run(HostileInputGenerator.generate(seed, n, targets, app.getHost() + ":" + app.getPort()), findings);
        }

        Stream<Executable> checks = Stream.of(
                () -> assertTrue(findings.failures.isEmpty(), findings::report),
                () -> assertEquals(ordersMade, count("orders"), "orders besides those made here"),
                () -> assertEquals(1, count("payments"), "payments besides the one made here"),
                () -> assertEquals(1, count("idempotency_tokens"),
                        "token rows besides the paid token's: an issued token has none until its first use"),
                () -> assertEquals(1, count("sandbox_charges"), "sandbox charges besides the paid one"),
                () -> assertEquals(0, count("sandbox_attempts"), "sandbox attempts counted apart"),
                () -> assertNull(changedBehaviour(), "sandbox behaviour"));
        Stream<Executable> stillPay = targets.tokens().stream().map(token -> () -> {
            String orderNo = targets.pendingOrders().get(targets.tokens().indexOf(token));
            Response paid = Fixtures.pay(MERCHANT, token, payBody(orderNo, id("req"), AMOUNT));
            assertEquals(200, paid.statusCode(), "a token the cases used still pays: " + paid.asString());
        });
        assertAll(findings.summary(), Stream.concat(checks, stillPay));
    }

    /** Sends one case and records what was wrong with its answer and what it changed. */
    private void run(Case c, Findings findings) {
        if (!c.mutations().isEmpty() && findings.hung.contains(c.mutations().get(0))) {
            findings.skipped++;
            return;
        }
        if (c.uncached()) {
            db.forgetCachedAnswers();
        }
        Answer answer = c.http2() != null ? exchangeOverHttp2(c.http2()) : exchange(c.request());
        if (answer == null) {
            findings.notSendable++;
            return;
        }
        findings.ran(c);
        String wrong = answer.failure() != null ? answer.failure() : wrong(c.expected(), answer);
        if (wrong != null && (refusedByTheCodec(c) || overTheCodecsSizeLimits(answer)) && notACodecRefusal(answer) == null) {
            wrong = null;
        }
        if (wrong != null) {
            findings.failed(c, wrong, answer);
            if (answer.timedOut() && !c.mutations().isEmpty()) {
                findings.hung.add(c.mutations().get(0));
            }
        }
        List<String> now = rows();
        if (!now.equals(rows)) {
            findings.failed(c, "it wrote to the database" + (answer.timedOut() ? " (or an earlier case did, late)" : "")
                    + ": " + difference(rows, now), answer);
            targets = withFreshTokens(targets);
            now = rows();
        }
        rows = now;
        String changed = c.base().sandboxBehavior() ? changedBehaviour() : null;
        if (changed != null) {
            findings.failed(c, "it changed the sandbox behaviour: " + changed, answer);
            resetBehaviour();
        }
    }

    private Targets targets() {
        for (String merchant : List.of(MERCHANT, OTHER_MERCHANT)) {
            as(merchant).body(Map.of("mode", "ok", "latency_ms", 0, "count", 0)).put("/sandbox/behavior").then().statusCode(200);
        }
        String paidOrder = pendingOrder();
        String paidToken = Fixtures.token(MERCHANT);
        String paidRequestNo = id("req");
        Response paid = Fixtures.pay(MERCHANT, paidToken, payBody(paidOrder, paidRequestNo, AMOUNT));
        assertEquals(200, paid.statusCode(), paid.asString());
        return withFreshTokens(new Targets(MERCHANT, OTHER_MERCHANT, List.of(), List.of(), Fixtures.token(OTHER_MERCHANT),
                paidOrder, paidToken, paidRequestNo, paid.asString()));
    }

    /** New pending orders and unused tokens (one order for each token) in place of those a case may have used up. */
    private Targets withFreshTokens(Targets t) {
        List<String> orders = new ArrayList<>();
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < TOKENS; i++) {
            orders.add(pendingOrder());
            tokens.add(Fixtures.token(MERCHANT));
        }
        return new Targets(t.merchant(), t.otherMerchant(), orders, tokens, t.foreignToken(), t.paidOrder(), t.paidToken(),
                t.paidRequestNo(), t.paidAnswer());
    }

    private String pendingOrder() {
        ordersMade++;
        return Fixtures.pendingOrder(MERCHANT);
    }

    private List<String> rows() {
        Object[] args = new Object[5];
        Arrays.fill(args, MERCHANTS_LIKE);
        List<String> rows = new ArrayList<>();
        for (Row row : pool.preparedQuery(ROWS).execute(Tuple.from(args)).await().atMost(Duration.ofSeconds(10))) {
            rows.add(row.getString(0));
        }
        rows.sort(null);
        return rows;
    }

    private long count(String table) {
        return db.count("SELECT COUNT(*) FROM " + table + " WHERE merchant_id LIKE ?", MERCHANTS_LIKE);
    }

    private static String difference(List<String> before, List<String> after) {
        List<String> gone = new ArrayList<>(before);
        gone.removeAll(after);
        List<String> added = new ArrayList<>(after);
        added.removeAll(before);
        return "now " + added + ", no longer " + gone;
    }

    /** What differs from the sandbox's normal behaviour, for charges or refunds, for either merchant, or null. */
    private static String changedBehaviour() {
        for (String merchant : List.of(MERCHANT, OTHER_MERCHANT)) {
            for (String operation : SANDBOX_OPERATIONS) {
                String setting = given().header(HostileInputGenerator.MERCHANT_HEADER, merchant)
                        .queryParam("operation", operation).get("/sandbox/behavior").asString();
                if (!setting.equals("{\"operation\":\"" + operation + "\",\"mode\":\"ok\",\"latency_ms\":0,\"count\":0}")) {
                    return merchant + ": " + setting;
                }
            }
        }
        return null;
    }

    private static void resetBehaviour() {
        for (String merchant : List.of(MERCHANT, OTHER_MERCHANT)) {
            for (String operation : SANDBOX_OPERATIONS) {
                as(merchant).body(Map.of("operation", operation, "mode", "ok", "count", 0)).put("/sandbox/behavior")
                        .then().statusCode(200);
            }
        }
    }

    /**
     * Requests the HTTP codec itself cannot parse (a malformed header line or framing, a broken
     * percent-escape in the request line, an oversized path or header block) are refused by Vert.x and Netty
     * before any of PayOnce's code runs, with a bare status and the connection closed; Quarkus offers no hook
     * to shape those answers. For them a 4xx of any type, or a connection closed without one, is the
     * refusal; that nothing was written is checked as for every case. A deployment's gateway answers such
     * requests before they reach an instance.
     */
    private static boolean refusedByTheCodec(Case c) {
        return c.mutations().stream().anyMatch(m -> m.startsWith("http: ")) || hasBrokenPercentEscape(c.request());
    }

    private static final Pattern BROKEN_ESCAPE = Pattern.compile("%(?![0-9A-Fa-f]{2})");

    /** A request line whose target has a '%' not followed by two hex digits, which the router cannot decode. */
    private static boolean hasBrokenPercentEscape(byte[] request) {
        if (request == null) {
            return false;
        }
        String text = new String(request, StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n");
        return BROKEN_ESCAPE.matcher(end < 0 ? text : text.substring(0, end)).find();
    }

    /** The codec's own answer to a request line or header block over its limits, whatever the case's mutations. */
    private static boolean overTheCodecsSizeLimits(Answer answer) {
        return (answer.status() == 414 || answer.status() == 431) && answer.mediaType() == null;
    }

    private static String notACodecRefusal(Answer answer) {
        if (answer.failure() != null) {
            return answer.timedOut() ? answer.failure() : null;
        }
        return answer.status() >= 400 && answer.status() < 500 ? null
                : "a " + answer.status() + " where the codec's 4xx refusal was due";
    }

    /** Why the answer is not the one due, or null when it is. */
    static String wrong(Expected expected, Answer answer) {
        return switch (expected.outcome()) {
            case REFUSED -> notARefusal(answer, expected.code());
            case CORRECT -> notCorrect(expected, answer);
            case CORRECT_OR_REFUSED -> answer.status() >= 400 && answer.status() < 500 ? notARefusal(answer, null)
                    : notCorrect(expected, answer);
        };
    }

    private static String notARefusal(Answer answer, String code) {
        int status = answer.status();
        if (status < 400 || status > 499) {
            return "a " + status + " where a 4xx refusal was due";
        }
        String type = answer.mediaType();
        if (!Problems.MEDIA_TYPE.equals(type)) {
            return "a " + status + " as " + (type == null ? "no Content-Type" : type) + ", not " + Problems.MEDIA_TYPE;
        }
        JsonNode problem = answer.json();
        if (problem == null || !problem.isObject()) {
            return "a " + status + " problem whose body is not a JSON object";
        }
        for (String member : List.of("type", "title", "detail")) {
            if (!problem.path(member).isTextual()) {
                return "a " + status + " problem without a string " + member;
            }
        }
        if (!problem.path("status").isInt() || problem.get("status").intValue() != status) {
            return "a " + status + " problem whose status member is " + problem.get("status");
        }
        if (!problem.path("code").isTextual() || problem.get("code").asText().isEmpty()) {
            return "a " + status + " problem without a code";
        }
        if (code != null && !code.equals(problem.get("code").asText())) {
            return "code " + problem.get("code").asText() + " where " + code + " was due";
        }
        if (answer.text().contains("Exception") || answer.text().contains("\tat ")) {
            return "a " + status + " problem that shows a stack trace";
        }
        if (answer.header("idempotent-replayed") != null) {
            return "a refusal marked as a replay";
        }
        return null;
    }

    private static String notCorrect(Expected expected, Answer answer) {
        if (expected.status() >= 400) {
            String wrong = notARefusal(answer, expected.code());
            return wrong != null ? wrong
                    : answer.status() != expected.status() ? "a " + answer.status() + " where " + expected.status() + " was due"
                            : null;
        }
        if (answer.status() != expected.status()) {
            return "a " + answer.status() + " where " + expected.status() + " was due";
        }
        if (!"application/json".equals(answer.mediaType())) {
            return "a " + answer.status() + " as " + answer.mediaType() + ", not application/json";
        }
        if (expected.exactBody() != null) {
            return !expected.exactBody().equals(answer.text()) ? "a body other than the first answer's"
                    : !"true".equals(answer.header("idempotent-replayed")) ? "a replay without Idempotent-Replayed: true"
                            : null;
        }
        JsonNode json = answer.json();
        for (Map.Entry<String, String> member : expected.members().entrySet()) {
            JsonNode value = json == null ? null : json.get(member.getKey());
            if (value == null || value.isContainerNode() || !value.asText().matches(member.getValue())) {
                return "member " + member.getKey() + " is " + value + " where " + member.getValue() + " was due";
            }
        }
        return null;
    }

    /**
     * An answer as read off the socket, or why none came ({@code failure}). Not the shared
     * {@link io.payonce.support.Answer}: a hostile case is judged on raw bytes and on every header as given,
     * repeated ones included.
     */
    record Answer(int status, Map<String, List<String>> headers, byte[] body, String failure, boolean timedOut) {

        static Answer none(String failure, boolean timedOut) {
            return new Answer(0, Map.of(), new byte[0], failure, timedOut);
        }

        String header(String name) {
            List<String> values = headers.get(name.toLowerCase(Locale.ROOT));
            return values == null || values.isEmpty() ? null : values.get(0);
        }

        /** The Content-Type without parameters, lower case; null when absent or given twice. */
        String mediaType() {
            List<String> values = headers.get("content-type");
            return values == null || values.size() != 1 ? null
                    : values.get(0).split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
        }

        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        JsonNode json() {
            try {
                return JSON.readTree(body);
            } catch (IOException notJson) {
                return null;
            }
        }

        String describe() {
            if (failure != null) {
                return failure;
            }
            return status + " " + headers + " " + render(body, 600);
        }
    }

    /**
     * Sends the bytes on a fresh connection and reads one answer. The socket is closed when the answer is
     * late, which also ends a write the server does not read; a write that fails still lets an answer the
     * server sent first be read.
     */
    private Answer exchange(byte[] request) {
        Socket socket = new Socket();
        AtomicBoolean late = new AtomicBoolean();
        ScheduledFuture<?> cutoff = cutoffs.schedule(() -> {
            late.set(true);
            closeQuietly(socket);
        }, ANSWER_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        ByteArrayOutputStream read = new ByteArrayOutputStream();
        String sendFailure = null;
        String readFailure = null;
        try {
            socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), app.getPort()), ANSWER_TIMEOUT_MS);
            // the cutoff ends a late answer; this only keeps a read from outliving it
            socket.setSoTimeout(ANSWER_TIMEOUT_MS + 2_000);
            try {
                OutputStream out = socket.getOutputStream();
                out.write(request);
                out.flush();
            } catch (IOException e) {
                sendFailure = e.toString();
            }
            InputStream in = socket.getInputStream();
            byte[] buffer = new byte[8192];
            while (true) {
                Answer answer = parse(read.toByteArray(), false);
                if (answer != null) {
                    return answer;
                }
                int n;
                try {
                    n = in.read(buffer);
                } catch (IOException e) {
                    readFailure = e.toString();
                    break;
                }
                if (n < 0) {
                    break;
                }
                read.write(buffer, 0, n);
            }
            Answer atEnd = parse(read.toByteArray(), true);
            if (atEnd != null) {
                return atEnd;
            }
        } catch (IOException e) {
            readFailure = e.toString();
        } finally {
            cutoff.cancel(false);
            closeQuietly(socket);
        }
        if (late.get()) {
            return Answer.none("no answer within " + ANSWER_TIMEOUT_MS + " ms (" + read.size() + " bytes read)", true);
        }
        return Answer.none("the connection ended without a whole answer after " + read.size() + " bytes"
                + (read.size() > 0 ? " (" + render(read.toByteArray(), 300) + ")" : "")
                + (sendFailure != null ? "; sending failed: " + sendFailure : "")
                + (readFailure != null ? "; reading failed: " + readFailure : ""), false);
    }

    /**
     * Sends the parts over HTTP/2 (cleartext, upgraded from HTTP/1.1 as a client library does by default);
     * null when the library refuses to send them at all.
     */
    private Answer exchangeOverHttp2(Parts parts) {
        HttpRequest request;
        try {
            HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create("http://" + app.getHost() + ":" + app.getPort()
                    + parts.target())).timeout(Duration.ofMillis(ANSWER_TIMEOUT_MS))
                    .method(parts.method(), parts.body() == null ? HttpRequest.BodyPublishers.noBody()
                            : HttpRequest.BodyPublishers.ofByteArray(parts.body()));
            for (String[] header : parts.headers()) {
                builder.header(header[0], header[1]);
            }
            request = builder.build();
        } catch (IllegalArgumentException notExpressible) {
            return null;
        }
        // a client of its own per case, as a raw socket is: no case inherits another's connection (which the
        // server may be closing with a GOAWAY after that case's stream error)
        HttpClient http2 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2)
                .connectTimeout(Duration.ofMillis(ANSWER_TIMEOUT_MS)).build();
        try {
            HttpResponse<byte[]> response = http2.send(request, HttpResponse.BodyHandlers.ofByteArray());
            Map<String, List<String>> headers = new TreeMap<>();
            response.headers().map().forEach((name, values) -> headers.put(name.toLowerCase(Locale.ROOT), values));
            headers.put(":version", List.of(response.version().toString()));
            return new Answer(response.statusCode(), headers, response.body(), null, false);
        } catch (HttpTimeoutException late) {
            return Answer.none("no answer within " + ANSWER_TIMEOUT_MS + " ms over HTTP/2", true);
        } catch (IOException e) {
            return Answer.none("the HTTP/2 exchange failed: " + e, false);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The first whole answer in {@code bytes} (interim 1xx answers skipped), or null while it is incomplete. */
    static Answer parse(byte[] bytes, boolean ended) {
        int headEnd = indexOf(bytes, "\r\n\r\n".getBytes(StandardCharsets.US_ASCII), 0);
        if (headEnd < 0) {
            return ended && bytes.length > 0 ? Answer.none("not an HTTP answer: " + render(bytes, 300), false) : null;
        }
        try {
            return parse(bytes, headEnd, ended);
        } catch (RuntimeException unreadable) {
            return Answer.none("an answer that cannot be read (" + unreadable + "): " + render(bytes, 300), false);
        }
    }

    private static Answer parse(byte[] bytes, int headEnd, boolean ended) {
        String[] lines = new String(bytes, 0, headEnd, StandardCharsets.ISO_8859_1).split("\r\n");
        String[] statusLine = lines[0].split(" ", 3);
        int status;
        try {
            status = Integer.parseInt(statusLine[1]);
        } catch (RuntimeException e) {
            return Answer.none("not an HTTP answer: " + render(bytes, 300), false);
        }
        int bodyStart = headEnd + 4;
        if (status >= 100 && status < 200) {
            return parse(Arrays.copyOfRange(bytes, bodyStart, bytes.length), ended);
        }
        Map<String, List<String>> headers = new TreeMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon > 0) {
                headers.computeIfAbsent(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), k -> new ArrayList<>())
                        .add(lines[i].substring(colon + 1).trim());
            }
        }
        byte[] rest = Arrays.copyOfRange(bytes, bodyStart, bytes.length);
        byte[] body;
        List<String> length = headers.get("content-length");
        if (headers.containsKey("transfer-encoding")) {
            body = unchunked(rest);
        } else if (length != null) {
            int n = Integer.parseInt(length.get(0));
            body = rest.length >= n ? Arrays.copyOf(rest, n) : null;
        } else {
            body = ended ? rest : null;
        }
        if (body == null) {
            return ended ? Answer.none("an answer cut short: " + render(bytes, 300), false) : null;
        }
        return new Answer(status, headers, body, null, false);
    }

    /** A chunked body decoded, or null while its last chunk has not arrived. */
    private static byte[] unchunked(byte[] rest) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        int at = 0;
        while (true) {
            int lineEnd = indexOf(rest, new byte[] { '\r', '\n' }, at);
            if (lineEnd < 0) {
                return null;
            }
            int size = Integer.parseInt(new String(rest, at, lineEnd - at, StandardCharsets.US_ASCII).split(";")[0].trim(), 16);
            at = lineEnd + 2;
            if (size == 0) {
                return body.toByteArray();
            }
            if (rest.length < at + size + 2) {
                return null;
            }
            body.write(rest, at, size);
            at += size + 2;
        }
    }

    private static int indexOf(byte[] bytes, byte[] what, int from) {
        for (int i = from; i <= bytes.length - what.length; i++) {
            if (Arrays.equals(bytes, i, i + what.length, what, 0, what.length)) {
                return i;
            }
        }
        return -1;
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing is all that is left to do
        }
    }

    /**
     * Bytes as text that shows each of them: printable ASCII as it is, {@code \r} and {@code \n} escaped
     * (a line break follows each \n), any other byte as {@code \xNN}, and a run of one to eight bytes
     * repeated at least four times and 24 bytes long as {@code <<run * count>>}.
     */
    static String render(byte[] bytes, int max) {
        StringBuilder out = new StringBuilder();
        int i = 0;
        while (i < bytes.length && out.length() < max) {
            int[] run = run(bytes, i);
            if (run != null) {
                out.append("<<").append(escape(bytes, i, i + run[0])).append(" * ").append(run[1]).append(">>");
                i += run[0] * run[1];
            } else {
                out.append(escape(bytes, i, i + 1));
                i++;
            }
        }
        if (i < bytes.length) {
            out.append("... (").append(bytes.length).append(" bytes in all)");
        }
        return out.toString();
    }

    private static int[] run(byte[] bytes, int at) {
        for (int unit = 1; unit <= 8; unit++) {
            int count = 1;
            while (at + (count + 1) * unit <= bytes.length
                    && Arrays.equals(bytes, at, at + unit, bytes, at + count * unit, at + (count + 1) * unit)) {
                count++;
            }
            if (count >= 4 && count * unit >= 24) {
                return new int[] { unit, count };
            }
        }
        return null;
    }

    private static String escape(byte[] bytes, int from, int to) {
        StringBuilder out = new StringBuilder();
        for (int i = from; i < to; i++) {
            int b = bytes[i] & 0xFF;
            if (b == '\r') {
                out.append("\\r");
            } else if (b == '\n') {
                out.append("\\n\n      ");
            } else if (b == '\\') {
                out.append("\\\\");
            } else if (b >= 0x20 && b < 0x7F) {
                out.append((char) b);
            } else {
                out.append(String.format("\\x%02X", b));
            }
        }
        return out.toString();
    }

    private static long seed() {
        String given = System.getProperty("fuzz.seed");
        if (given == null || given.isBlank()) {
            return DEFAULT_SEED;
        }
        return given.trim().equals("random") ? new SecureRandom().nextLong() : Long.parseLong(given.trim());
    }

    /** What went wrong in a run, and how often each mutation took part in a failure. */
    private static final class Findings {

        final long seed;
        final List<String> failures = new ArrayList<>();
        /** The failures grouped by what went wrong (long numbers and rows left out), each with its cases. */
        final Map<String, List<String>> byKind = new LinkedHashMap<>();
        final Set<String> hung = new HashSet<>();
        /** Per mutation (and per base): cases that used it, and of those, cases that failed. */
        final Map<String, int[]> tally = new TreeMap<>();
        int ran;
        int skipped;
        int notSendable;

        Findings(long seed) {
            this.seed = seed;
        }

        void ran(Case c) {
            ran++;
            for (String name : names(c)) {
                tally.computeIfAbsent(name, k -> new int[2])[0]++;
            }
        }

        void failed(Case c, String why, Answer answer) {
            if (failures.stream().noneMatch(f -> f.startsWith("case " + c.number() + ":"))) {
                for (String name : names(c)) {
                    tally.get(name)[1]++;
                }
            }
            String failure = "case " + c.number() + ": " + c.label() + "\n    " + why + "\n    sent:   " + sent(c)
                    + "\n    answer: " + answer.describe();
            failures.add(failure);
            String kind = why.startsWith("it ") ? why.split(":", 2)[0] : why.replaceAll("\\d{4,}", "N");
            byKind.computeIfAbsent(kind, k -> new ArrayList<>()).add(failure);
        }

        private static String sent(Case c) {
            if (c.http2() == null) {
                return render(c.request(), 1500);
            }
            Parts p = c.http2();
            StringBuilder s = new StringBuilder("over HTTP/2: ").append(p.method()).append(' ').append(p.target());
            for (String[] header : p.headers()) {
                s.append("\n      ").append(header[0]).append(": ").append(header[1]);
            }
            return s.append("\n      ").append(p.body() == null ? "(no body)" : render(p.body(), 1000)).toString();
        }

        private static List<String> names(Case c) {
            List<String> names = new ArrayList<>(c.mutations());
            names.add("base " + c.base());
            return names;
        }

        String summary() {
            return ran + " cases run, " + skipped + " skipped after a case of their kind hung, " + notSendable
                    + " that the HTTP/2 client would not send, " + failures.size() + " failures (seed " + seed + ")";
        }

        String report() {
            StringBuilder out = new StringBuilder(summary()).append("; rerun with -Dfuzz.seed=").append(seed)
                    .append(", one case with -Dfuzz.case=<n> as well.\nFailing cases per mutation (failed/ran): ");
            Map<String, String> counts = new LinkedHashMap<>();
            tally.forEach((name, n) -> {
                if (n[1] > 0) {
                    counts.put(name, n[1] + "/" + n[0]);
                }
            });
            out.append(counts).append("\nEach kind of failure, how often, and its first case:\n");
            byKind.entrySet().stream().limit(KINDS_REPORTED).forEach(kind -> out.append(kind.getValue().size()).append(" x ")
                    .append(kind.getKey()).append("\n  ").append(kind.getValue().get(0)).append('\n'));
            if (byKind.size() > KINDS_REPORTED) {
                out.append("... and ").append(byKind.size() - KINDS_REPORTED).append(" more kinds\n");
            }
            return out.toString();
        }
    }
}
