package io.payonce.api;

import static io.payonce.api.HostileInputGenerator.Dim.ACCEPT;
import static io.payonce.api.HostileInputGenerator.Dim.BODY;
import static io.payonce.api.HostileInputGenerator.Dim.CONTENT_TYPE;
import static io.payonce.api.HostileInputGenerator.Dim.EXTRA;
import static io.payonce.api.HostileInputGenerator.Dim.FRAMING;
import static io.payonce.api.HostileInputGenerator.Dim.KEY;
import static io.payonce.api.HostileInputGenerator.Dim.MERCHANT;
import static io.payonce.api.HostileInputGenerator.Dim.METHOD;
import static io.payonce.api.HostileInputGenerator.Dim.TARGET;
import static io.payonce.api.HostileInputGenerator.Effect.KEEPS;
import static io.payonce.api.HostileInputGenerator.Effect.MAY_REFUSE;
import static io.payonce.api.HostileInputGenerator.Effect.REFUSES;

import java.io.ByteArrayOutputStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;

/**
 * Hostile variants of valid requests to every endpoint, for {@link HostileInputFuzzTest}. A case is one
 * valid request (its base) with mutations applied, made from the seed and the case number alone, as the
 * exact bytes to send and the answer they must get.
 * <p>
 * A base that would write (a fresh order, an unused token, a fresh sandbox charge or close, a sandbox
 * behaviour) always gets a mutation the contract or HTTP says must be refused, so that its only correct
 * answer is a 4xx that changes nothing; more mutations may follow, never on what that one changed, so none
 * can make the request valid again. A base that writes nothing (reads, issuing a token, the paid request's
 * replay, the same order again) may also get mutations that keep it valid ({@link Effect#KEEPS}, then its
 * correct answer is due) or that a server may accept or refuse ({@link Effect#MAY_REFUSE}, then either).
 */
final class HostileInputGenerator {

    static final String MERCHANT_HEADER = "X-Merchant-Id";
    static final String KEY_HEADER = "Idempotency-Key";
    static final int MAX_BODY = 16 * 1024;
    /** The identifier alphabet, which is also base64url's. */
    private static final String ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    /** Characters outside the identifier alphabet, each alone enough to make an identifier invalid. */
    private static final String[] BAD_CHARS = { " ", "\t", ".", "/", "\\", "%", "+", "=", "?", "#", "&", ";", ":", "@",
            "!", "*", "'", "\"", "<", ">", "{", "}", "|", "^", "`", "~", ",", "(", ")", "[", "]", "$", "\u00e9", "\u00df",
            "\u4e2d", "\ud83d\ude00", "\u0085", "\u00a0", "\u200b", "\u2028", "\ufeff", "\uff41", "\u212a", "\u0130",
            "\u0131", "\u043e", "\ud800", "\udfff" };
    /** Chars U+E000 to U+E0FF stand for the raw bytes 0x00 to 0xFF on the wire (invalid UTF-8 where wanted). */
    private static final int RAW = 0xE000;

    private HostileInputGenerator() {
    }

    /** The rows the cases are built on. Unused tokens and pending orders are replaced after a case consumed one. */
    record Targets(String merchant, String otherMerchant, List<String> pendingOrders, List<String> tokens,
            String foreignToken, String paidOrder, String paidToken, String paidRequestNo, String paidAnswer) {
    }

    enum Outcome {
        /** A 4xx problem+json (with {@link Expected#code} when set). */
        REFUSED,
        /** The base's own answer. */
        CORRECT,
        /** The base's own answer or a 4xx problem+json. */
        CORRECT_OR_REFUSED
    }

    /**
     * The answer due: its status, and for a success the members it must have (regular expressions over
     * their text) or the exact body of a replay; for a refusal as the correct answer, its {@code code}.
     */
    record Expected(Outcome outcome, int status, String code, Map<String, String> members, String exactBody) {

        static Expected refused() {
            return new Expected(Outcome.REFUSED, 0, null, Map.of(), null);
        }

        Expected orRefused() {
            return new Expected(Outcome.CORRECT_OR_REFUSED, status, code, members, exactBody);
        }
    }

    /**
     * One generated request: its base, the mutations in the order applied, its bytes as HTTP/1.1 and the
     * answer due; {@code http2} holds its parts when it is to be sent over HTTP/2 instead.
     */
    record Case(int number, Base base, List<String> mutations, byte[] request, Parts http2, Expected expected,
            boolean uncached) {

        String label() {
            return base + " " + mutations + (uncached ? " (its answer dropped from Redis first)" : "");
        }
    }

    /** A request as an HTTP client library takes it: method, target, headers in order, body (null: none). */
    record Parts(String method, String target, List<String[]> headers, byte[] body) {
    }

    /** What a mutation does to a request that was valid. */
    enum Effect {
        KEEPS, MAY_REFUSE, REFUSES
    }

    /** The parts of a request a mutation changes; mutations of one case change disjoint parts. */
    enum Dim {
        MERCHANT, KEY, CONTENT_TYPE, ACCEPT, BODY, FRAMING, TARGET, METHOD, EXTRA
    }

    /** The type of a body member, for the values that break it. */
    enum Field {
        ID, AMOUNT, CURRENCY, MODE, LATENCY, COUNT, BODY_MERCHANT;

        boolean required() {
            return this != LATENCY && this != COUNT;
        }

        boolean textual() {
            return this == ID || this == CURRENCY || this == MODE || this == BODY_MERCHANT;
        }

        boolean numeric() {
            return this == AMOUNT || this == LATENCY || this == COUNT;
        }
    }

    enum Base {
        CREATE_ORDER("POST", true, 10),
        CREATE_EXISTING_ORDER("POST", false, 4),
        GET_PENDING_ORDER("GET", false, 3),
        GET_PAID_ORDER("GET", false, 3),
        GET_UNKNOWN_ORDER("GET", false, 3),
        ISSUE_TOKEN("POST", false, 5),
        PAY_WITH_UNUSED_TOKEN("POST", true, 20),
        REPLAY_PAID_REQUEST("POST", false, 14),
        GET_PAYMENT("GET", false, 3),
        GET_UNKNOWN_PAYMENT("GET", false, 2),
        SANDBOX_CHARGE("POST", true, 8),
        SANDBOX_QUERY("GET", false, 3),
        SANDBOX_QUERY_UNKNOWN("GET", false, 2),
        SANDBOX_CLOSE_FRESH("POST", true, 5),
        SANDBOX_CLOSE_SUCCEEDED("POST", false, 3),
        SANDBOX_LEDGER("GET", false, 4),
        SANDBOX_SET_BEHAVIOR("PUT", true, 6),
        SANDBOX_RESET_BEHAVIOR("PUT", false, 3);

        final String method;
        /** Whether the request as it is would write: then every case of it must be refused. */
        final boolean writes;
        final int weight;

        Base(String method, boolean writes, int weight) {
            this.method = method;
            this.writes = writes;
            this.weight = weight;
        }

        boolean json() {
            return this == CREATE_ORDER || this == CREATE_EXISTING_ORDER || this == SANDBOX_CHARGE || isPay()
                    || sandboxBehavior();
        }

        boolean isPay() {
            return this == PAY_WITH_UNUSED_TOKEN || this == REPLAY_PAID_REQUEST;
        }

        boolean sandboxBehavior() {
            return this == SANDBOX_SET_BEHAVIOR || this == SANDBOX_RESET_BEHAVIOR;
        }

        boolean get() {
            return method.equals("GET");
        }

        boolean pathId() {
            return get() && this != SANDBOX_LEDGER || this == SANDBOX_CLOSE_FRESH || this == SANDBOX_CLOSE_SUCCEEDED;
        }

        /** Bases whose answer for another merchant is a refusal that writes nothing. */
        boolean refusedToAnotherMerchant() {
            return isPay() || pathId() && this != SANDBOX_CLOSE_FRESH && this != SANDBOX_CLOSE_SUCCEEDED;
        }

        /** Methods that reach no endpoint at this path, or one that refuses this request. */
        List<String> otherMethods() {
            return switch (this) {
                case SANDBOX_SET_BEHAVIOR, SANDBOX_RESET_BEHAVIOR -> List.of("POST", "DELETE", "PATCH", "TRACE");
                default -> get() ? List.of("POST", "PUT", "DELETE", "PATCH", "TRACE")
                        : List.of("GET", "PUT", "DELETE", "PATCH", "TRACE");
            };
        }
    }

    /** A request under construction. */
    static final class Draft {

        final Base base;
        final Targets t;
        String method;
        String idPrefix = "";
        String idSuffix = "";
        String path;
        String query;
        boolean absoluteForm;
        final List<String[]> merchant = new ArrayList<>();
        final List<String[]> key = new ArrayList<>();
        final List<String[]> contentType = new ArrayList<>();
        final List<String[]> accept = new ArrayList<>();
        final List<String> extra = new ArrayList<>();
        /** The JSON body's members as raw JSON text (name with its quotes, value), or null without one. */
        List<Member> members;
        String gap = "";
        UnaryOperator<String> bodyText = UnaryOperator.identity();
        UnaryOperator<byte[]> bodyBytes = UnaryOperator.identity();
        /** The body of a base without a JSON one, or null. */
        String body;
        boolean noBody;
        Framing framing = Framing.LENGTH;
        String declaredLength;
        int sentOf;
        String token;
        boolean uncached;
        boolean http2;

        Draft(Base base, Targets t) {
            this.base = base;
            this.t = t;
            this.method = base.method;
        }

        void pathWithId(String prefix, String id, String suffix) {
            idPrefix = prefix;
            idSuffix = suffix;
            path = prefix + id + suffix;
        }

        void header(List<String[]> slot, String name, String value) {
            slot.clear();
            slot.add(new String[] { name, value });
        }

        void member(String name, String value, Field field) {
            members.add(new Member(quoted(name), value, field));
        }

        List<Member> typed(Predicate<Field> which) {
            return members.stream().filter(m -> m.field != null && which.test(m.field)).toList();
        }

        String json() {
            StringBuilder s = new StringBuilder("{").append(gap);
            for (int i = 0; i < members.size(); i++) {
                if (i > 0) {
                    s.append(gap).append(',').append(gap);
                }
                Member m = members.get(i);
                s.append(m.name).append(gap).append(':').append(gap).append(m.value);
            }
            return s.append(gap).append('}').toString();
        }

        /** The body as it goes on the wire, before framing; null for none at all. */
        byte[] payload() {
            if (noBody) {
                return null;
            }
            String text = members != null ? bodyText.apply(json()) : body;
            return text == null ? null : bodyBytes.apply(bytes(text));
        }

        Parts parts() {
            List<String[]> headers = new ArrayList<>();
            for (List<String[]> slot : List.of(merchant, key, contentType, accept)) {
                headers.addAll(slot);
            }
            return new Parts(method, path + (query != null ? "?" + query : ""), headers, payload());
        }

        byte[] request(String host) {
            StringBuilder head = new StringBuilder();
            String target = path + (query != null ? "?" + query : "");
            head.append(method).append(' ').append(absoluteForm ? "http://" + host + target : target).append(" HTTP/1.1\r\n");
            head.append("Host: ").append(host).append("\r\n");
            for (List<String[]> slot : List.of(merchant, key, contentType, accept)) {
                for (String[] h : slot) {
                    head.append(h[0]).append(": ").append(h[1]).append("\r\n");
                }
            }
            for (String line : extra) {
                head.append(line).append("\r\n");
            }
            byte[] payload = payload();
            byte[] sent = payload;
            switch (framing) {
                case LENGTH -> {
                    if (payload != null) {
                        head.append("Content-Length: ").append(payload.length).append("\r\n");
                    }
                }
                case DECLARED -> {
                    head.append("Content-Length: ").append(declaredLength).append("\r\n");
                    sent = payload == null ? new byte[0] : Arrays.copyOf(payload, Math.min(sentOf, payload.length));
                }
                case CHUNKED, CHUNKED_WITH_EXTENSIONS, LENGTH_AND_CHUNKED, BAD_CHUNK_SIZE -> {
                    if (framing == Framing.LENGTH_AND_CHUNKED) {
                        head.append("Content-Length: ").append(payload == null ? 0 : payload.length).append("\r\n");
                    }
                    head.append("Transfer-Encoding: chunked\r\n");
                    sent = chunked(payload == null ? new byte[0] : payload, framing);
                }
            }
            head.append("Connection: close\r\n\r\n");
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            out.writeBytes(bytes(head.toString()));
            if (sent != null) {
                out.writeBytes(sent);
            }
            return out.toByteArray();
        }

        private byte[] chunked(byte[] payload, Framing kind) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            int chunk = Math.max(1, payload.length / 3 + 1);
            for (int at = 0; at < payload.length; at += chunk) {
                int n = Math.min(chunk, payload.length - at);
                String size = kind == Framing.BAD_CHUNK_SIZE ? "zz" : Integer.toHexString(n);
                String ext = kind == Framing.CHUNKED_WITH_EXTENSIONS ? ";fuzz=\"1\"" : "";
                out.writeBytes(bytes(size + ext + "\r\n"));
                out.write(payload, at, n);
                out.writeBytes(bytes("\r\n"));
            }
            out.writeBytes(bytes("0\r\n\r\n"));
            return out.toByteArray();
        }
    }

    static final class Member {
        String name;
        String value;
        final Field field;

        Member(String name, String value, Field field) {
            this.name = name;
            this.value = value;
            this.field = field;
        }
    }

    enum Framing {
        LENGTH, DECLARED, CHUNKED, CHUNKED_WITH_EXTENSIONS, LENGTH_AND_CHUNKED, BAD_CHUNK_SIZE
    }

    record Mutation(String name, Set<Dim> dims, Function<Base, Effect> effect, int weight, BiConsumer<Draft, Random> apply) {
    }

    /** Case {@code number} of the run with {@code seed}, on {@code targets}, for the server at {@code host}. */
    static Case generate(long seed, int number, Targets targets, String host) {
        Random r = new Random(mix(seed, number));
        Base base = pickBase(r);
        Draft d = start(base, targets, r, number);
        EnumSet<Dim> used = EnumSet.noneOf(Dim.class);
        List<String> names = new ArrayList<>();
        Effect effect = KEEPS;
        int more;
        if (base.writes) {
            Mutation primary = pick(r, base, used, REFUSES);
            effect = apply(primary, d, r, used, names);
            more = r.nextInt(3);
        } else {
            more = new int[] { 0, 1, 1, 1, 2, 2, 3 }[r.nextInt(7)];
        }
        for (int i = 0; i < more; i++) {
            Mutation m = pick(r, base, used, null);
            if (m != null) {
                Effect e = apply(m, d, r, used, names);
                effect = e.compareTo(effect) > 0 ? e : effect;
            }
        }
        Expected expected = base.writes || effect == REFUSES ? Expected.refused()
                : effect == MAY_REFUSE ? correct(base, targets).orRefused() : correct(base, targets);
        return new Case(number, base, List.copyOf(names), d.request(host), d.http2 ? d.parts() : null, expected, d.uncached);
    }

    private static Effect apply(Mutation m, Draft d, Random r, Set<Dim> used, List<String> names) {
        m.apply().accept(d, r);
        used.addAll(m.dims());
        names.add(m.name());
        return m.effect().apply(d.base);
    }

    private static long mix(long seed, int number) {
        long z = seed + 0x9E3779B97F4A7C15L * (number + 1L);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static Base pickBase(Random r) {
        int total = Arrays.stream(Base.values()).mapToInt(b -> b.weight).sum();
        int at = r.nextInt(total);
        for (Base b : Base.values()) {
            at -= b.weight;
            if (at < 0) {
                return b;
            }
        }
        throw new IllegalStateException();
    }

    /** A mutation that applies to the base, changes none of {@code used}, and has {@code effect} when given. */
    private static Mutation pick(Random r, Base base, Set<Dim> used, Effect effect) {
        List<Mutation> fit = CATALOG.stream()
                .filter(m -> m.effect().apply(base) != null && (effect == null || m.effect().apply(base) == effect))
                .filter(m -> m.dims().stream().noneMatch(used::contains))
                .toList();
        if (fit.isEmpty()) {
            if (effect == REFUSES) {
                throw new IllegalStateException("no refusing mutation for " + base);
            }
            return null;
        }
        int at = r.nextInt(fit.stream().mapToInt(Mutation::weight).sum());
        for (Mutation m : fit) {
            at -= m.weight();
            if (at < 0) {
                return m;
            }
        }
        throw new IllegalStateException();
    }

    /** The valid request of each base. */
    private static Draft start(Base b, Targets t, Random r, int number) {
        Draft d = new Draft(b, t);
        d.header(d.merchant, MERCHANT_HEADER, t.merchant());
        String fresh = "fz" + number + "_" + Integer.toHexString(r.nextInt() & 0xfffffff);
        String pending = t.pendingOrders().get(r.nextInt(t.pendingOrders().size()));
        switch (b) {
            case CREATE_ORDER, CREATE_EXISTING_ORDER -> {
                d.path = "/orders";
                json(d);
                d.member("order_no", quoted(b == Base.CREATE_ORDER ? fresh : t.paidOrder()), Field.ID);
                d.member("amount", "1999", Field.AMOUNT);
                d.member("currency", "\"USD\"", Field.CURRENCY);
            }
            case GET_PENDING_ORDER -> d.pathWithId("/orders/", pending, "");
            case GET_PAID_ORDER -> d.pathWithId("/orders/", t.paidOrder(), "");
            case GET_UNKNOWN_ORDER -> d.pathWithId("/orders/", fresh, "");
            case ISSUE_TOKEN -> d.path = "/tokens";
            case PAY_WITH_UNUSED_TOKEN, REPLAY_PAID_REQUEST -> {
                boolean paid = b == Base.REPLAY_PAID_REQUEST;
                d.path = "/pay";
                json(d);
                d.token = paid ? t.paidToken() : t.tokens().get(r.nextInt(t.tokens().size()));
                d.header(d.key, KEY_HEADER, quoted(d.token));
                d.member("order_no", quoted(paid ? t.paidOrder() : pending), Field.ID);
                d.member("request_no", quoted(paid ? t.paidRequestNo() : fresh), Field.ID);
                d.member("amount", "1999", Field.AMOUNT);
                d.uncached = paid && r.nextInt(3) == 0;
            }
            case GET_PAYMENT -> d.pathWithId("/payments/", t.paidRequestNo(), "");
            case GET_UNKNOWN_PAYMENT -> d.pathWithId("/payments/", fresh, "");
            case SANDBOX_CHARGE -> {
                d.path = "/sandbox/charges";
                json(d);
                d.member("merchant_id", quoted(t.merchant()), Field.BODY_MERCHANT);
                d.member("order_no", quoted(fresh), Field.ID);
                d.member("request_no", quoted(fresh), Field.ID);
                d.member("amount", "1999", Field.AMOUNT);
                d.member("currency", "\"USD\"", Field.CURRENCY);
            }
            case SANDBOX_QUERY -> d.pathWithId("/sandbox/charges/", t.paidRequestNo(), "");
            case SANDBOX_QUERY_UNKNOWN -> d.pathWithId("/sandbox/charges/", fresh, "");
            case SANDBOX_CLOSE_FRESH -> d.pathWithId("/sandbox/charges/", fresh, "/close");
            case SANDBOX_CLOSE_SUCCEEDED -> d.pathWithId("/sandbox/charges/", t.paidRequestNo(), "/close");
            case SANDBOX_LEDGER -> {
                d.path = "/sandbox/charges";
                d.query = "order_no=" + t.paidOrder();
            }
            case SANDBOX_SET_BEHAVIOR, SANDBOX_RESET_BEHAVIOR -> {
                boolean reset = b == Base.SANDBOX_RESET_BEHAVIOR;
                d.path = "/sandbox/behavior";
                json(d);
                d.member("mode", reset ? "\"ok\"" : "\"decline\"", Field.MODE);
                d.member("latency_ms", "0", Field.LATENCY);
                d.member("count", reset ? "0" : "5", Field.COUNT);
            }
        }
        return d;
    }

    private static void json(Draft d) {
        d.members = new ArrayList<>();
        d.header(d.contentType, "Content-Type", "application/json");
    }

    /** The answer of each base as it is. */
    private static Expected correct(Base b, Targets t) {
        return switch (b) {
            case CREATE_EXISTING_ORDER, GET_PAID_ORDER -> ok(200, "order_no", t.paidOrder(), "status", "PAID");
            case GET_PENDING_ORDER -> ok(200, "status", "PENDING");
            case ISSUE_TOKEN -> new Expected(Outcome.CORRECT, 201, null,
                    Map.of("token", "tok_[A-Za-z0-9_-]{52}", "expires_at", ".+"), null);
            case REPLAY_PAID_REQUEST -> new Expected(Outcome.CORRECT, 200, null, Map.of(), t.paidAnswer());
            case GET_PAYMENT -> ok(200, "request_no", t.paidRequestNo(), "status", "SUCCEEDED");
            case SANDBOX_QUERY -> ok(200, "request_no", t.paidRequestNo(), "status", "SUCCEEDED");
            case SANDBOX_LEDGER -> ok(200, "order_no", t.paidOrder(), "charges", "1", "attempts", "1");
            case SANDBOX_RESET_BEHAVIOR -> ok(200, "mode", "ok", "latency_ms", "0", "count", "0");
            case GET_UNKNOWN_ORDER -> refusal(404, "order_not_found");
            case GET_UNKNOWN_PAYMENT -> refusal(404, "payment_not_found");
            case SANDBOX_QUERY_UNKNOWN -> refusal(404, "charge_not_found");
            case SANDBOX_CLOSE_SUCCEEDED -> refusal(409, "charge_succeeded");
            default -> Expected.refused();
        };
    }

    private static Expected ok(int status, String... memberValues) {
        Map<String, String> members = new LinkedHashMap<>();
        for (int i = 0; i < memberValues.length; i += 2) {
            members.put(memberValues[i], Pattern.quote(memberValues[i + 1]));
        }
        return new Expected(Outcome.CORRECT, status, null, members, null);
    }

    private static Expected refusal(int status, String code) {
        return new Expected(Outcome.CORRECT, status, code, Map.of(), null);
    }

    // The mutations. Each names the parts it changes and, per base, its effect on a valid request (null:
    // it does not apply there).

    private static Function<Base, Effect> all(Effect e) {
        return b -> e;
    }

    /** On a base with a JSON body, else (null: not applicable). */
    private static Function<Base, Effect> jsonElse(Effect onJson, Effect otherwise) {
        return b -> b.json() ? onJson : otherwise;
    }

    private static Function<Base, Effect> pay(Effect e) {
        return b -> b.isPay() ? e : null;
    }

    private static Function<Base, Effect> withPathId(Effect e) {
        return b -> b.pathId() ? e : null;
    }

    /** A body over the contract's 16 KiB, sent or declared: refused on POST and PUT; on GET either. */
    private static Function<Base, Effect> oversize() {
        return b -> b.get() ? MAY_REFUSE : REFUSES;
    }

    private static Mutation m(String name, Set<Dim> dims, Function<Base, Effect> effect, BiConsumer<Draft, Random> apply) {
        return new Mutation(name, dims, effect, 10, apply);
    }

    private static Mutation rare(String name, Set<Dim> dims, Function<Base, Effect> effect, BiConsumer<Draft, Random> apply) {
        return new Mutation(name, dims, effect, 2, apply);
    }

    private static final List<Mutation> CATALOG = List.of(
            // X-Merchant-Id
            m("merchant: missing", Set.of(MERCHANT), all(REFUSES), (d, r) -> d.merchant.clear()),
            m("merchant: empty", Set.of(MERCHANT), all(REFUSES), (d, r) -> d.header(d.merchant, MERCHANT_HEADER, "")),
            m("merchant: only whitespace", Set.of(MERCHANT), all(REFUSES),
                    (d, r) -> d.header(d.merchant, MERCHANT_HEADER, pick(r, " ", "\t", "   \t "))),
            m("merchant: malformed identifier", Set.of(MERCHANT), all(REFUSES),
                    (d, r) -> d.header(d.merchant, MERCHANT_HEADER, hostileId(r, d.t.merchant(), Where.HEADER))),
            m("merchant: too long", Set.of(MERCHANT), all(REFUSES),
                    (d, r) -> d.header(d.merchant, MERCHANT_HEADER, idChars(r, pick(r, 65, 1000, 20000)))),
            m("merchant: given twice, the same", Set.of(MERCHANT), all(REFUSES),
                    (d, r) -> d.merchant.add(new String[] { pick(r, MERCHANT_HEADER, "x-merchant-id"), d.t.merchant() })),
            m("merchant: given twice, another merchant second", Set.of(MERCHANT), all(REFUSES),
                    (d, r) -> d.merchant.add(new String[] { MERCHANT_HEADER, d.t.otherMerchant() })),
            m("merchant: given twice, another merchant first", Set.of(MERCHANT), all(REFUSES),
                    (d, r) -> d.merchant.add(0, new String[] { MERCHANT_HEADER, d.t.otherMerchant() })),
            m("merchant: given twice, once empty", Set.of(MERCHANT), all(REFUSES),
                    (d, r) -> d.merchant.add(r.nextInt(2), new String[] { MERCHANT_HEADER, "" })),
            m("merchant: two values in one header", Set.of(MERCHANT), all(REFUSES),
                    (d, r) -> d.header(d.merchant, MERCHANT_HEADER, d.t.merchant() + pick(r, ",", ", ", ";", " ")
                            + pick(r, d.t.merchant(), d.t.otherMerchant()))),
            m("merchant: only under a near-miss name", Set.of(MERCHANT), all(REFUSES),
                    (d, r) -> d.header(d.merchant, pick(r, "X-Merchant", "X_Merchant_Id", "X-Merchant-Ids", "Merchant-Id",
                            "X-Merchant-Id-"), d.t.merchant())),
            m("merchant: another merchant", Set.of(MERCHANT), b -> b.refusedToAnotherMerchant() ? REFUSES : null,
                    (d, r) -> d.header(d.merchant, MERCHANT_HEADER, d.t.otherMerchant())),
            m("merchant: header name in another case", Set.of(MERCHANT), all(KEEPS),
                    (d, r) -> d.header(d.merchant, pick(r, "x-merchant-id", "X-MERCHANT-ID", "x-MeRcHaNt-iD"), d.t.merchant())),

            // Idempotency-Key (and the body's token)
            m("key: missing", Set.of(KEY), pay(REFUSES), (d, r) -> d.key.clear()),
            m("key: empty", Set.of(KEY), pay(REFUSES), (d, r) -> d.header(d.key, KEY_HEADER, pick(r, "", " ", "\"\"", "\t"))),
            m("key: one character changed", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, maybeQuoted(r, changeOneChar(r, d.token)))),
            m("key: truncated", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, maybeQuoted(r, d.token.substring(0, d.token.length() - 1 - r.nextInt(12))))),
            m("key: characters appended", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, maybeQuoted(r, d.token + pick(r, "A", "==", "%3D", " x", ".", "\u00e9")))),
            m("key: another merchant's token", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, maybeQuoted(r, d.t.foreignToken()))),
            m("key: made up", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, maybeQuoted(r, "tok_" + idChars(r, 52)))),
            m("key: in another case", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, maybeQuoted(r, r.nextBoolean() ? d.token.toUpperCase(Locale.ROOT)
                            : d.token.toLowerCase(Locale.ROOT).replace("tok_", "TOK_")))),
            m("key: too long", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, maybeQuoted(r, d.token + idChars(r, pick(r, 200, 1000, 20000))))),
            m("key: malformed characters", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, maybeQuoted(r, insertInside(r, d.token, headerBadChar(r))))),
            m("key: structured-field string left open", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, pick(r, "\"" + d.token, d.token + "\"",
                            "\"\"" + d.token + "\"\"", "\"" + d.token + "\\\""))),
            m("key: structured-field string with an escape it does not allow", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, "\"" + insertInside(r, d.token, "\\") + "\"")),
            m("key: structured-field byte sequence", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, ":" + Base64.getEncoder().encodeToString(
                            d.token.getBytes(StandardCharsets.US_ASCII)) + ":")),
            m("key: given twice, the same", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.key.add(new String[] { pick(r, KEY_HEADER, "idempotency-key"), maybeQuoted(r, d.token) })),
            m("key: given twice, two tokens", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.key.add(r.nextInt(2), new String[] { KEY_HEADER, quoted(pick(r, d.t.tokens())) })),
            m("key: given twice, once empty", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.key.add(r.nextInt(2), new String[] { KEY_HEADER, "" })),
            m("key: two tokens in one header", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, KEY_HEADER, pick(r, quoted(d.token) + ", " + quoted(d.token),
                            d.token + "," + pick(r, d.t.tokens()), quoted(d.token) + ";" + quoted(d.token)))),
            m("key: only under a near-miss name", Set.of(KEY), pay(REFUSES),
                    (d, r) -> d.header(d.key, pick(r, "Idempotency_Key", "Idempotency-Keys", "X-Idempotency-Key", "Idempotency"),
                            quoted(d.token))),
            m("key: bare token", Set.of(KEY), pay(KEEPS), (d, r) -> d.header(d.key, KEY_HEADER, d.token)),
            m("key: header name in another case", Set.of(KEY), pay(KEEPS),
                    (d, r) -> d.header(d.key, pick(r, "idempotency-key", "IDEMPOTENCY-KEY"), quoted(d.token))),
            m("key: structured-field parameters", Set.of(KEY), pay(MAY_REFUSE),
                    (d, r) -> d.header(d.key, KEY_HEADER, quoted(d.token) + pick(r, ";a=1", ";expires=?1", "; b"))),
            m("key: in the body instead of the header", Set.of(KEY, BODY), pay(KEEPS), (d, r) -> {
                d.key.clear();
                d.member("token", quoted(d.token), null);
            }),
            m("key: in the body as well, the same", Set.of(KEY, BODY), pay(KEEPS),
                    (d, r) -> d.member("token", quoted(d.token), null)),
            m("key: in the body as well, different", Set.of(KEY, BODY), pay(REFUSES),
                    (d, r) -> d.member("token", quoted(pick(r, otherToken(r, d), d.t.foreignToken(), "x", "")), null)),
            m("key: in the body with the wrong type", Set.of(KEY, BODY), pay(REFUSES),
                    (d, r) -> d.member("token", pick(r, "12345", "true", "[" + quoted(d.token) + "]", "{}", "1.5"), null)),
            m("key: in the body only, too long", Set.of(KEY, BODY), pay(REFUSES), (d, r) -> {
                d.key.clear();
                d.member("token", quoted(d.token + idChars(r, 256)), null);
            }),
            m("key: on an endpoint that takes none", Set.of(KEY), b -> b.isPay() ? null : MAY_REFUSE,
                    (d, r) -> d.header(d.key, KEY_HEADER, quoted(pick(r, d.t.tokens())))),

            // Content-Type
            m("content-type: missing", Set.of(CONTENT_TYPE), jsonElse(REFUSES, null), (d, r) -> d.contentType.clear()),
            m("content-type: not JSON", Set.of(CONTENT_TYPE), jsonElse(REFUSES, MAY_REFUSE),
                    (d, r) -> d.header(d.contentType, "Content-Type", pick(r, "text/plain", "text/plain; charset=utf-8",
                            "application/xml", "text/json", "application/x-json", "application/problem+json",
                            "application/merge-patch+json", "application/json-seq", "application/jsonp",
                            "application/octet-stream", "text/html", "image/png"))),
            m("content-type: malformed", Set.of(CONTENT_TYPE), jsonElse(REFUSES, MAY_REFUSE),
                    (d, r) -> d.header(d.contentType, "Content-Type", pick(r, "application", "json", "/", "application/",
                            "/json", ";", "application/json/x", "application json", "application/json\u00e9",
                            "\u00e9/json", "application/\"json\""))),
            m("content-type: empty", Set.of(CONTENT_TYPE), jsonElse(REFUSES, MAY_REFUSE),
                    (d, r) -> d.header(d.contentType, "Content-Type", "")),
            m("content-type: wildcard", Set.of(CONTENT_TYPE), all(MAY_REFUSE),
                    (d, r) -> d.header(d.contentType, "Content-Type", pick(r, "*/*", "application/*", "*/json"))),
            m("content-type: JSON with charset utf-8", Set.of(CONTENT_TYPE), all(KEEPS),
                    (d, r) -> d.header(d.contentType, "Content-Type", pick(r, "application/json; charset=utf-8",
                            "application/json;charset=UTF-8"))),
            m("content-type: JSON with another charset", Set.of(CONTENT_TYPE), all(MAY_REFUSE),
                    (d, r) -> d.header(d.contentType, "Content-Type", pick(r, "application/json; charset=utf-16",
                            "application/json; charset=iso-8859-1", "application/json; charset=x-unknown"))),
            m("content-type: JSON in odd case or with odd parameters", Set.of(CONTENT_TYPE), all(MAY_REFUSE),
                    (d, r) -> d.header(d.contentType, "Content-Type", pick(r, "APPLICATION/JSON", "Application/Json",
                            "application/json;", "application/json; x", "application/json; q=0"))),
            m("content-type: given twice", Set.of(CONTENT_TYPE), all(MAY_REFUSE),
                    (d, r) -> d.contentType.add(r.nextInt(d.contentType.size() + 1),
                            new String[] { "Content-Type", pick(r, "application/json", "text/plain") })),
            m("content-type: two types in one header", Set.of(CONTENT_TYPE), all(MAY_REFUSE),
                    (d, r) -> d.header(d.contentType, "Content-Type", pick(r, "application/json, text/plain",
                            "text/plain, application/json"))),
            m("content-type: multipart form with the JSON as a part", Set.of(CONTENT_TYPE, BODY), jsonElse(REFUSES, MAY_REFUSE),
                    (d, r) -> {
                        d.header(d.contentType, "Content-Type", "multipart/form-data; boundary=fuzzfuzz");
                        UnaryOperator<String> part = json -> "--fuzzfuzz\r\nContent-Disposition: form-data; name=\"body\"\r\n"
                                + "Content-Type: application/json\r\n\r\n" + json + "\r\n--fuzzfuzz--\r\n";
                        if (d.members != null) {
                            d.bodyText = part;
                        } else {
                            d.body = part.apply("{}");
                        }
                    }),
            m("content-type: form fields", Set.of(CONTENT_TYPE, BODY), jsonElse(REFUSES, MAY_REFUSE), (d, r) -> {
                d.header(d.contentType, "Content-Type", "application/x-www-form-urlencoded");
                if (d.members != null) {
                    d.bodyText = json -> form(d.members);
                } else {
                    d.body = "a=1";
                }
            }),

            // Accept
            m("accept: a type the API does not serve", Set.of(ACCEPT), b -> b.writes ? MAY_REFUSE : REFUSES,
                    (d, r) -> d.header(d.accept, "Accept", pick(r, "text/html", "text/plain", "application/xml", "image/png",
                            "text/csv", "application/octet-stream", "text/html, application/xhtml+xml"))),
            m("accept: JSON among others", Set.of(ACCEPT), all(KEEPS),
                    (d, r) -> d.header(d.accept, "Accept", pick(r, "application/json", "*/*", "application/*",
                            "text/html, application/json", "application/json;q=0.9, */*;q=0.1",
                            "application/problem+json, application/json"))),
            m("accept: only problem+json", Set.of(ACCEPT), all(MAY_REFUSE),
                    (d, r) -> d.header(d.accept, "Accept", "application/problem+json")),
            m("accept: JSON with q=0", Set.of(ACCEPT), all(MAY_REFUSE),
                    (d, r) -> d.header(d.accept, "Accept", pick(r, "application/json;q=0", "*/*;q=0", "application/json; q=0.0"))),
            m("accept: malformed", Set.of(ACCEPT), all(MAY_REFUSE),
                    (d, r) -> d.header(d.accept, "Accept", pick(r, "???", "application/", "/json", ";;;", "*/", "",
                            "text/html;q=abc", "application/json;q=2", "\u00e9", "application/json;;;q=1"))),
            m("accept: given twice", Set.of(ACCEPT), all(MAY_REFUSE), (d, r) -> {
                d.header(d.accept, "Accept", pick(r, "application/json", "text/html"));
                d.accept.add(new String[] { "Accept", pick(r, "application/json", "text/plain", "*/*") });
            }),
            m("accept: a long list", Set.of(ACCEPT), all(MAY_REFUSE), (d, r) -> {
                StringBuilder list = new StringBuilder();
                for (int i = 0; i < 300; i++) {
                    list.append("type/x-").append(i).append(";q=0.").append(i % 9 + 1).append(", ");
                }
                d.header(d.accept, "Accept", list.append(pick(r, "application/json", "text/plain")).toString());
            }),

            // whole bodies
            m("body: truncated", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                double at = r.nextDouble();
                d.bodyText = json -> json.substring(0, 1 + (int) (at * (json.length() - 1)));
            }),
            m("body: trailing garbage", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                String tail = pick(r, " x", "}", ",", "{}", "]", "\u0000", "\u0000\u0000\u0000", "//c", "/* */", "#",
                        "null", "\"", "\\", "\u00a0", "\ufeff", "\r\n\r\nGET / HTTP/1.1", "\u0085", raw(0xFF), "SELF");
                d.bodyText = json -> json + (tail.equals("SELF") ? json : tail);
            }),
            m("body: leading garbage", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                String head = pick(r, ")]}',\n", "\u0000", "x", ",", "//\n", "\u00a0", "\ufeff\ufeff", raw(0xFE, 0xFF),
                        raw(0xFF, 0xFE), raw(0x00, 0x00, 0xFE, 0xFF), raw(0xEF, 0xBB), "\u0085");
                d.bodyText = json -> head + json;
            }),
            m("body: characters JSON does not allow between tokens", Set.of(BODY), jsonElse(REFUSES, null),
                    (d, r) -> d.gap = pick(r, "\u0000", "\u000b", "\u000c", "\u00a0", "\u2028", "\ufeff", "\u0085", "\u0001")),
            m("body: not an object", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                String other = pick(r, "[]", "[1,2,3]", "\"x\"", "1999", "true", "null", "WRAP", "STRING");
                d.bodyText = json -> other.equals("WRAP") ? "[" + json + "]"
                        : other.equals("STRING") ? quoted(json) : other;
            }),
            m("body: empty", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> d.bodyText = json -> ""),
            m("body: none at all", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> d.noBody = true),
            m("body: only whitespace", Set.of(BODY), jsonElse(REFUSES, null),
                    (d, r) -> d.bodyText = json -> pick(r, " ", "\r\n", " \t\r\n ")),
            m("body: empty object", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> d.bodyText = json -> "{}"),
            m("body: a required member missing", Set.of(BODY), jsonElse(REFUSES, null),
                    (d, r) -> d.members.remove(pick(r, d.typed(Field::required)))),
            m("body: a member given twice, the same value", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                Member m = pick(r, d.typed(f -> true));
                d.members.add(r.nextInt(d.members.size() + 1), new Member(m.name, m.value, null));
            }),
            m("body: a member given twice, another value", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                Member m = pick(r, d.typed(f -> true));
                d.members.add(r.nextInt(d.members.size() + 1), new Member(m.name, plausibleOther(m), null));
            }),
            m("body: a member given twice, once with its name escaped", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                Member m = pick(r, d.typed(f -> true));
                d.members.add(r.nextInt(d.members.size() + 1), new Member(escapeAll(m.name), m.value, null));
            }),
            m("body: deeply nested", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                String nested = r.nextBoolean() ? nest("[", "]", 1000 + r.nextInt(7000), "1", r.nextInt(4) == 0)
                        : nest("{\"a\":", "}", 1000 + r.nextInt(1700), "1", r.nextInt(4) == 0);
                d.bodyText = json -> nested;
            }),
            m("body: deeply nested unknown member, a required one missing", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                d.members.remove(pick(r, d.typed(Field::required)));
                d.members.add(new Member("\"deep\"", nest("[", "]", 1000 + r.nextInt(6000), "{}", false), null));
            }),
            m("body: JSON5 and other relaxations", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                int which = r.nextInt(5);
                d.bodyText = json -> switch (which) {
                    case 0 -> json.replace('"', '\'');
                    case 1 -> json.replaceAll("\"([a-z_]+)\":", "$1:");
                    case 2 -> json.substring(0, json.length() - 1) + ",}";
                    case 3 -> "{/* fuzz */" + json.substring(1);
                    default -> json.replaceFirst(",", ",,");
                };
            }),
            m("body: over 16 KiB", Set.of(BODY), oversize(), (d, r) -> {
                int size = pick(r, MAX_BODY + 1, MAX_BODY + 1 + r.nextInt(24_000), 65_536);
                if (d.members != null) {
                    d.bodyText = json -> padded(json, size);
                } else {
                    d.body = padded("{}", size);
                }
            }),
            m("body: valid JSON with whitespace to over 16 KiB", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                int size = MAX_BODY + 1 + r.nextInt(4000);
                boolean before = r.nextBoolean();
                d.bodyText = json -> before ? " ".repeat(size - json.length()) + json : json + "\n".repeat(size - json.length());
            }),
            rare("body: over the HTTP layer's own limit", Set.of(BODY), oversize(), (d, r) -> {
                int size = pick(r, 1 << 20, (1 << 20) + 4096);
                if (d.members != null) {
                    d.bodyText = json -> padded(json, size);
                } else {
                    d.body = padded("{}", size);
                }
            }),
            new Mutation("body: whitespace to between 10 and 16 KiB", Set.of(BODY), jsonElse(KEEPS, null), 30, (d, r) -> {
                int size = pick(r, 10_240, 10_241, 12_000, MAX_BODY - 1, MAX_BODY);
                d.bodyText = json -> json + " ".repeat(size - json.length());
            }),
            m("body: members reordered", Set.of(BODY), jsonElse(KEEPS, null),
                    (d, r) -> Collections.shuffle(d.members, r)),
            m("body: whitespace between tokens", Set.of(BODY), jsonElse(KEEPS, null),
                    (d, r) -> d.gap = pick(r, " ", "\t", "\r\n", "\n  ", " \t\r\n ")),
            m("body: member names escaped", Set.of(BODY), jsonElse(KEEPS, null), (d, r) -> {
                for (Member m : d.members) {
                    m.name = escapeAll(m.name);
                }
            }),
            m("body: identifier characters escaped", Set.of(BODY), jsonElse(KEEPS, null), (d, r) -> {
                for (Member m : d.typed(f -> f == Field.ID || f == Field.BODY_MERCHANT)) {
                    m.value = escapeAll(m.value);
                }
            }),
            m("body: an unknown member", Set.of(BODY), jsonElse(MAY_REFUSE, null),
                    (d, r) -> d.members.add(r.nextInt(d.members.size() + 1), new Member("\"fuzz\"",
                            pick(r, "1", "\"x\"", "null", "[]", "{\"a\":[1,{\"b\":null}]}"), null))),
            m("body: byte order mark", Set.of(BODY), jsonElse(MAY_REFUSE, null), (d, r) -> d.bodyText = json -> "\ufeff" + json),
            m("body: UTF-16 or UTF-32", Set.of(BODY), jsonElse(MAY_REFUSE, null), (d, r) -> {
                String charset = pick(r, "UTF-16BE", "UTF-16LE", "UTF-16", "UTF-32BE", "UTF-32LE");
                d.bodyBytes = utf8 -> new String(utf8, StandardCharsets.UTF_8).getBytes(Charset.forName(charset));
            }),
            m("body: currency given explicitly", Set.of(BODY), pay(MAY_REFUSE),
                    (d, r) -> d.member("currency", "\"USD\"", null)),
            m("body: where none is taken", Set.of(BODY), b -> b.json() ? null : MAY_REFUSE,
                    (d, r) -> d.body = pick(r, "{\"x\":1}", "{\"order_no\":\"" + d.t.paidOrder() + "\"}", "garbage", "\u0000\u0000",
                            "{\"a\":1,\"a\":2}")),

            // single members
            m("field: wrong type", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                Member m = pick(r, d.typed(f -> true));
                m.value = wrongType(r, m.field, unquoted(m.value));
            }),
            m("field: invalid value", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                Member m = pick(r, d.typed(f -> true));
                m.value = invalidValue(r, m.field, unquoted(m.value), d.t);
            }),
            m("field: number out of range", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                Member m = pick(r, d.typed(Field::numeric));
                m.value = pick(r, "9223372036854775808", "-9223372036854775809", "18446744073709551616",
                        "1" + "0".repeat(40), "9".repeat(1500), "-" + "9".repeat(400),
                        m.field == Field.COUNT ? "2147483648" : "99999999999999999999");
            }),
            m("field: null", Set.of(BODY), jsonElse(REFUSES, null),
                    (d, r) -> pick(r, d.typed(Field::required)).value = "null"),
            m("field: identifier too long", Set.of(BODY), b -> b.json() && !b.sandboxBehavior() ? REFUSES : null,
                    (d, r) -> pick(r, d.typed(f -> f == Field.ID || f == Field.BODY_MERCHANT)).value =
                            quoted(idChars(r, pick(r, 65, 1000, 16_000)))),
            m("field: identifier with a character outside [A-Za-z0-9_-]", Set.of(BODY),
                    b -> b.json() && !b.sandboxBehavior() ? REFUSES : null, (d, r) -> {
                        Member m = pick(r, d.typed(f -> f == Field.ID || f == Field.BODY_MERCHANT));
                        m.value = jsonString(r, hostileId(r, unquoted(m.value), Where.JSON));
                    }),
            m("field: invalid UTF-8 in a string", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                Member m = pick(r, d.typed(Field::textual));
                String s = unquoted(m.value);
                int at = r.nextInt(s.length() + 1);
                m.value = "\"" + s.substring(0, at) + pick(r, raw(0xFF), raw(0xC0, 0xAF), raw(0xED, 0xA0, 0x80),
                        raw(0xF4, 0x90, 0x80, 0x80), raw(0x80), raw(0xE2, 0x82), raw(0xF8, 0x88, 0x80, 0x80, 0x80))
                        + s.substring(at) + "\"";
            }),
            m("field: lone surrogate in a string", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                Member m = pick(r, d.typed(Field::textual));
                String s = unquoted(m.value);
                int at = r.nextInt(s.length() + 1);
                m.value = "\"" + s.substring(0, at) + pick(r, "\\ud800", "\\udfff", "\\uDBFF", "\\ud83d") + s.substring(at) + "\"";
            }),
            m("field: control character in a string", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                Member m = pick(r, d.typed(Field::textual));
                String s = unquoted(m.value);
                int at = r.nextInt(s.length() + 1);
                m.value = "\"" + s.substring(0, at) + pick(r, "\\u0000", "\u0000", "\\u0001", "\u0001", "\\n", "\n", "\\u007f",
                        "\\u001f", "\t") + s.substring(at) + "\"";
            }),
            m("field: deeply nested value", Set.of(BODY), jsonElse(REFUSES, null), (d, r) -> {
                Member m = pick(r, d.typed(f -> true));
                m.value = r.nextBoolean() ? nest("[", "]", 1000 + r.nextInt(6000), m.value, r.nextInt(5) == 0)
                        : nest("{\"v\":", "}", 1000 + r.nextInt(1500), m.value, r.nextInt(5) == 0);
            }),
            m("field: merchant_id of another merchant", Set.of(BODY), b -> b == Base.SANDBOX_CHARGE ? REFUSES : null,
                    (d, r) -> pick(r, d.typed(f -> f == Field.BODY_MERCHANT)).value = quoted(pick(r, d.t.otherMerchant(),
                            d.t.merchant().toUpperCase(Locale.ROOT)))),

            // framing
            m("framing: chunked", Set.of(FRAMING), all(MAY_REFUSE), (d, r) -> d.framing = Framing.CHUNKED),
            m("framing: chunked with extensions", Set.of(FRAMING), all(MAY_REFUSE),
                    (d, r) -> d.framing = Framing.CHUNKED_WITH_EXTENSIONS),
            m("http: Content-Length and Transfer-Encoding both", Set.of(FRAMING), all(MAY_REFUSE),
                    (d, r) -> d.framing = Framing.LENGTH_AND_CHUNKED),
            m("framing: chunked, over 16 KiB", Set.of(FRAMING, BODY), oversize(), (d, r) -> {
                d.framing = Framing.CHUNKED;
                int size = MAX_BODY + 1 + r.nextInt(8000);
                if (d.members != null) {
                    d.bodyText = json -> json + " ".repeat(size - json.length());
                } else {
                    d.body = padded("{}", size);
                }
            }),
            m("framing: declared over 16 KiB, nothing sent", Set.of(FRAMING, BODY), oversize(), (d, r) -> {
                d.framing = Framing.DECLARED;
                d.declaredLength = String.valueOf(pick(r, MAX_BODY + 1L, 20_000L, 1_000_000L, 1L << 31, 1_000_000_000_000L,
                        Long.MAX_VALUE));
                d.sentOf = 0;
            }),
            m("framing: declared over 16 KiB, part sent", Set.of(FRAMING, BODY), oversize(), (d, r) -> {
                d.framing = Framing.DECLARED;
                d.declaredLength = String.valueOf(pick(r, MAX_BODY + 1L, 100_000L, 1_000_000L));
                d.sentOf = 1 + r.nextInt(60);
                if (d.members == null) {
                    d.body = padded("{}", 200);
                }
            }),
            m("framing: Content-Length shorter than the body", Set.of(FRAMING, BODY), jsonElse(REFUSES, null), (d, r) -> {
                d.framing = Framing.DECLARED;
                byte[] whole = d.payload();
                int shorter = 1 + r.nextInt(whole.length - 1);
                d.declaredLength = String.valueOf(shorter);
                d.sentOf = whole.length;
            }),
            m("http: Content-Length not a number", Set.of(FRAMING, BODY), jsonElse(REFUSES, null), (d, r) -> {
                int length = d.payload().length;
                d.framing = Framing.DECLARED;
                d.declaredLength = pick(r, "+" + length, length + ".0", "0x" + Integer.toHexString(length), "-" + length,
                        "abc", "", "99999999999999999999", length + " " + length, "1e3");
                d.sentOf = length;
            }),
            m("http: Content-Length given twice, differing", Set.of(FRAMING, BODY), jsonElse(REFUSES, null), (d, r) -> {
                int length = d.payload().length;
                d.framing = Framing.DECLARED;
                d.declaredLength = length + "\r\nContent-Length: " + (length - 1 - r.nextInt(5));
                d.sentOf = length;
            }),
            m("http: chunk size not hexadecimal", Set.of(FRAMING), jsonElse(REFUSES, null),
                    (d, r) -> d.framing = Framing.BAD_CHUNK_SIZE),
            rare("framing: body stops before its declared end", Set.of(FRAMING, BODY), jsonElse(REFUSES, null), (d, r) -> {
                byte[] whole = d.payload();
                d.framing = Framing.DECLARED;
                d.declaredLength = String.valueOf(whole.length);
                d.sentOf = r.nextInt(whole.length);
            }),

            // request target and method
            m("path: identifier outside [A-Za-z0-9_-]{1,64}", Set.of(TARGET), withPathId(REFUSES),
                    (d, r) -> d.path = d.idPrefix + pathSegment(hostileId(r, idOf(d), Where.PATH)) + d.idSuffix),
            m("path: percent-encoding tricks in the identifier", Set.of(TARGET), withPathId(REFUSES),
                    (d, r) -> d.path = d.idPrefix + pick(r, idOf(d) + pick(r, "%2F", "%2f..%2f", "%252F", "%2e%2e", "%C0%AF",
                            "%ED%A0%80", "%00", "%0D%0A", "%20", "%E2%80%8B", "%FF"), "%2e", "%2e%2e", "%2E%2E%2F",
                            "..%2F..%2Fpay", "%2F" + idOf(d)) + d.idSuffix),
            m("path: a malformed percent-escape", Set.of(TARGET), all(REFUSES),
                    (d, r) -> d.path = d.path + pick(r, "%ZZ", "%", "%2", "%u0041", "%%")),
            m("path: goes nowhere", Set.of(TARGET), all(REFUSES), (d, r) -> d.path = pick(r, d.path + "/extra",
                    d.path.toUpperCase(Locale.ROOT), d.path + "%2F", d.path + "%2Fx",
                    d.path + "%00", d.path + "/..", "/api" + d.path, d.path + ".json", d.path + "%20", d.path + "~")),
            m("path: an equivalent spelling", Set.of(TARGET), all(MAY_REFUSE), (d, r) -> {
                switch (r.nextInt(8)) {
                    case 0 -> d.path = "/" + d.path;
                    case 1 -> d.path = "/." + d.path;
                    case 2 -> d.path = "/fz/.." + d.path;
                    case 3 -> d.path = d.path + "/";
                    case 4 -> d.path = d.path + ";fuzz=1";
                    case 5 -> d.path = "/%" + Integer.toHexString(d.path.charAt(1)).toUpperCase(Locale.ROOT) + d.path.substring(2);
                    case 6 -> d.absoluteForm = true;
                    default -> d.path = "/%2e" + d.path;
                }
            }),
            m("query: order_no missing or malformed", Set.of(TARGET), b -> b == Base.SANDBOX_LEDGER ? REFUSES : null,
                    (d, r) -> d.query = pick(r, null, "", "order_no=", "order_no", "ORDER_NO=" + d.t.paidOrder(),
                            "order-no=" + d.t.paidOrder(), "orderNo=" + d.t.paidOrder(),
                            "order_no=" + pathSegment(hostileId(r, d.t.paidOrder(), Where.PATH)), "order_no=%zz",
                            "order_no=%", "order_no=" + d.t.paidOrder() + "%00", "order_no=" + d.t.paidOrder() + "+x",
                            "order_no=" + d.t.paidOrder() + "%26x", "order_no=" + idChars(r, 65),
                            "order_no=%2e%2e&order_no=" + d.t.paidOrder() + "%2F")),
            m("query: order_no given twice, once valid", Set.of(TARGET), b -> b == Base.SANDBOX_LEDGER ? MAY_REFUSE : null,
                    (d, r) -> d.query = r.nextBoolean() ? d.query + "&order_no=x%20y" : "order_no=x%20y&" + d.query),
            m("query: parameters nothing reads", Set.of(TARGET), all(MAY_REFUSE), (d, r) -> {
                String junk = pick(r, "x=1", "debug=true", "amount=1", "a=%00", "_method=DELETE", "&&&", "a=" + "b".repeat(2000));
                d.query = d.query == null ? junk : d.query + "&" + junk;
            }),
            m("query: a malformed percent-escape", Set.of(TARGET), all(MAY_REFUSE), (d, r) -> {
                String junk = pick(r, "%zz", "a=%", "a=%G1", "a=%u0041");
                d.query = d.query == null ? junk : d.query + "&" + junk;
            }),
            m("http: raw non-ASCII bytes in the path", Set.of(TARGET), withPathId(REFUSES),
                    (d, r) -> d.path = d.idPrefix + idOf(d) + pick(r, "\u00e9", "\u4e2d", raw(0xFF), raw(0xC0, 0xAF)) + d.idSuffix),
            m("http: a path segment of 20000 characters", Set.of(TARGET), withPathId(REFUSES),
                    (d, r) -> d.path = d.idPrefix + idChars(r, 20_000) + d.idSuffix),
            m("method: not allowed here", Set.of(METHOD), all(REFUSES), (d, r) -> d.method = pick(r, d.base.otherMethods())),
            m("method: unknown or in lower case", Set.of(METHOD), all(REFUSES),
                    (d, r) -> d.method = pick(r, "FOO", "PAYME", d.base.method.toLowerCase(Locale.ROOT),
                            d.base.method.charAt(0) + d.base.method.substring(1).toLowerCase(Locale.ROOT))),

            new Mutation("http/2: the same request over HTTP/2", Set.of(FRAMING, EXTRA), all(KEEPS), 30, (d, r) -> d.http2 = true),

            // other headers
            m("header: harmless extras", Set.of(EXTRA), all(KEEPS), (d, r) -> {
                List<String> all = new ArrayList<>(List.of("X-Request-Id: fuzz-" + r.nextInt(1000), "User-Agent: fuzz/1.0",
                        "X-Forwarded-For: 203.0.113.7", "Forwarded: for=203.0.113.7;proto=https", "Cookie: session=abc",
                        "Cache-Control: no-cache", "Via: 1.1 proxy", "X-Empty:", "Origin: https://example.com",
                        "Referer: https://example.com/checkout", "Accept-Language: de-CH, fr;q=0.5"));
                Collections.shuffle(all, r);
                d.extra.addAll(all.subList(0, 1 + r.nextInt(4)));
            }),
            m("header: a hundred more headers", Set.of(EXTRA), all(KEEPS), (d, r) -> {
                for (int i = 0; i < 100; i++) {
                    d.extra.add("X-Fuzz-" + i + ": " + i);
                }
            }),
            m("header: a value of 8000 characters", Set.of(EXTRA), all(KEEPS),
                    (d, r) -> d.extra.add("User-Agent: " + "a".repeat(8000))),
            m("header: Prefer", Set.of(EXTRA), all(MAY_REFUSE), (d, r) -> d.extra.add("Prefer: " + pick(r, "wait=0",
                    "wait=999999", "respond-async", "return=minimal", "wait=-1", "wait=abc", "wait=99999999999"))),
            m("header: Content-Encoding the body does not have", Set.of(EXTRA), all(MAY_REFUSE),
                    (d, r) -> d.extra.add("Content-Encoding: " + pick(r, "gzip", "deflate", "br", "x-unknown", "gzip, gzip"))),
            m("header: method override", Set.of(EXTRA), all(MAY_REFUSE),
                    (d, r) -> d.extra.add(pick(r, "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override") + ": "
                            + pick(r, "DELETE", "GET", "PUT"))),
            m("header: Expect 100-continue", Set.of(EXTRA), all(MAY_REFUSE), (d, r) -> d.extra.add("Expect: 100-continue")),
            m("header: non-ASCII bytes in a value", Set.of(EXTRA), all(MAY_REFUSE),
                    (d, r) -> d.extra.add("X-Note: " + pick(r, "caf\u00e9", "\u4e2d\u6587", raw(0xFF, 0xFE), "\ud800"))),
            m("header: merchant name spelled with underscores", Set.of(EXTRA), all(MAY_REFUSE),
                    (d, r) -> d.extra.add("X_Merchant_Id: " + d.t.otherMerchant())),
            m("http: header line without a colon", Set.of(EXTRA), all(MAY_REFUSE), (d, r) -> d.extra.add("X-Fuzz-No-Colon")),
            m("http: whitespace before a header's colon", Set.of(EXTRA), all(MAY_REFUSE), (d, r) -> d.extra.add("X-Fuzz : 1")),
            m("http: folded header line", Set.of(EXTRA), all(MAY_REFUSE), (d, r) -> {
                d.extra.add("X-Fuzz: a");
                d.extra.add(" b");
            }),
            m("http: control character in a header value", Set.of(EXTRA), all(MAY_REFUSE),
                    (d, r) -> d.extra.add("X-Fuzz: a" + pick(r, "\u0000", "\u0001", "\u007f", "\u001b") + "b")),
            rare("http: headers over 20 KiB", Set.of(EXTRA), all(MAY_REFUSE),
                    (d, r) -> d.extra.add("X-Fuzz-Long: " + "b".repeat(30_000))));

    enum Where {
        JSON, PATH, HEADER
    }

    /**
     * A string outside {@code [A-Za-z0-9_-]{1,64}} however it is decoded: in a path each character outside
     * the unreserved set is percent-encoded afterwards, in a header no whitespace is put at either end (where
     * HTTP would strip it) and no control character is used (that is a mutation of its own).
     */
    static String hostileId(Random r, String valid, Where where) {
        int kind = r.nextInt(where == Where.JSON ? 8 : 7);
        return switch (kind) {
            case 0 -> idChars(r, where == Where.PATH ? pick(r, 65, 1000, 3000) : pick(r, 65, 1000));
            case 1, 2, 3 -> insertInside(r, valid, where == Where.HEADER ? headerBadChar(r) : pick(r, BAD_CHARS));
            case 4 -> pick(r, "../" + valid, valid + "/..", "..", ".", "./" + valid, "a/../" + valid, valid + "\\..\\x");
            case 5 -> lookalike(r, valid);
            case 6 -> "%" + Integer.toHexString(valid.charAt(0)).toUpperCase(Locale.ROOT) + valid.substring(1);
            default -> "";
        };
    }

    private static String headerBadChar(Random r) {
        return pick(r, Arrays.stream(BAD_CHARS).filter(c -> c.length() == 2 || c.charAt(0) >= 0x20 && c.charAt(0) != 0x7F)
                .toArray(String[]::new));
    }

    /** A letter replaced by one that looks the same or folds to it: never ASCII. */
    private static String lookalike(Random r, String valid) {
        int at = r.nextInt(valid.length());
        char c = valid.charAt(at);
        String look = c == 'k' || c == 'K' ? "\u212a" : c == 'o' ? "\u043e" : c == 'i' ? "\u0131" : c == 's' ? "\u017f"
                : Character.isLetterOrDigit(c) ? String.valueOf((char) (c + 0xFEE0)) : "\uff3f";
        return valid.substring(0, at) + look + valid.substring(at + 1);
    }

    private static String insertInside(Random r, String s, String c) {
        int at = 1 + r.nextInt(Math.max(1, s.length() - 1));
        return s.substring(0, at) + c + s.substring(at);
    }

    private static String changeOneChar(Random r, String token) {
        int at = 4 + r.nextInt(token.length() - 4);
        char now = token.charAt(at);
        char other;
        do {
            other = ID_CHARS.charAt(r.nextInt(ID_CHARS.length()));
        } while (other == now);
        return token.substring(0, at) + other + token.substring(at + 1);
    }

    private static String otherToken(Random r, Draft d) {
        List<String> others = d.t.tokens().stream().filter(t -> !t.equals(d.token)).toList();
        return others.isEmpty() ? "tok_" + idChars(r, 52) : pick(r, others);
    }

    static String idChars(Random r, int length) {
        StringBuilder s = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            s.append(ID_CHARS.charAt(r.nextInt(ID_CHARS.length())));
        }
        return s.toString();
    }

    private static String idOf(Draft d) {
        return d.path.substring(d.idPrefix.length(), d.path.length() - d.idSuffix.length());
    }

    private static String wrongType(Random r, Field field, String valid) {
        return switch (field) {
            case AMOUNT -> pick(r, "1999.0", "19.99", "1999.5", "1.999e3", "1999e0", "2E3", "1e400", "-0.0", "\"1999\"",
                    "\" 1999\"", "\"1e3\"", "\"\"", "true", "false", "[1999]", "[]", "{}", "{\"value\":1999}", "NaN",
                    "Infinity", "-Infinity", "01999", "+1999", ".5", "1999.", "0x7CF", "1_999", "1 999");
            case LATENCY, COUNT -> pick(r, "1.5", "0.0", "1e3", "\"0\"", "\"\"", "true", "[0]", "[]", "{}", "NaN", "00", "+0");
            case ID, BODY_MERCHANT -> pick(r, "12345", "0", "1.5", "true", "false", "[]", "[" + quoted(valid) + "]", "{}",
                    "{\"value\":" + quoted(valid) + "}", "-1");
            case CURRENCY -> pick(r, "840", "true", "[\"USD\"]", "{\"code\":\"USD\"}", "8.4e2", "[]");
            case MODE -> pick(r, "0", "1", "3", "-1", "true", "[\"decline\"]", "[]", "{}", "{\"mode\":\"decline\"}", "1.0");
        };
    }

    private static String invalidValue(Random r, Field field, String valid, Targets t) {
        return switch (field) {
            case AMOUNT -> pick(r, "0", "-0", "-1", "-1999", "-9223372036854775808");
            case LATENCY -> pick(r, "-1", "-9223372036854775808");
            case COUNT -> pick(r, "-1", "-2147483648");
            case ID, BODY_MERCHANT -> jsonString(r, hostileId(r, valid, Where.JSON));
            case CURRENCY -> jsonString(r, pick(r, "usd", "Usd", "US", "USDX", "U$D", "\uff35\uff33\uff24", "US D", "",
                    " USD", "USD ", "US\u0000D", "U\u0301SD", "\u00dcSD", "840", "usd\u0000"));
            case MODE -> jsonString(r, pick(r, "OK", "Ok", "okay", "", " ok", "ok ", "decline ", "DECLINE", "fail",
                    "timeout", "ok\u0000", "\uff4f\uff4b", "ok;decline", "fail-before-accept"));
        };
    }

    /** Another value of the member's type that a later reader might take, for a member given twice. */
    private static String plausibleOther(Member m) {
        return switch (m.field) {
            case AMOUNT -> "1";
            case LATENCY -> "5000";
            case COUNT -> "100";
            case CURRENCY -> "\"EUR\"";
            case MODE -> "\"timeout_after_accept\"";
            case ID, BODY_MERCHANT -> quoted(unquoted(m.value) + "x");
        };
    }

    private static String nest(String open, String close, int depth, String inner, boolean unclosed) {
        return open.repeat(depth) + inner + (unclosed ? "" : close.repeat(depth));
    }

    /** {@code json} with a member "pad" inserted first, so that the whole is {@code size} characters. */
    private static String padded(String json, int size) {
        String head = "{\"pad\":\"";
        String tail = json.equals("{}") ? "\"}" : "\"," + json.substring(1);
        return head + "x".repeat(Math.max(0, size - head.length() - tail.length())) + tail;
    }

    private static String form(List<Member> members) {
        StringBuilder s = new StringBuilder();
        for (Member m : members) {
            s.append(s.length() == 0 ? "" : "&").append(unquoted(m.name)).append('=').append(unquoted(m.value));
        }
        return s.toString();
    }

    static String quoted(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static String maybeQuoted(Random r, String token) {
        return r.nextBoolean() ? quoted(token) : token;
    }

    private static String unquoted(String json) {
        return json.length() >= 2 && json.startsWith("\"") && json.endsWith("\"") ? json.substring(1, json.length() - 1) : json;
    }

    /** A JSON string of {@code s}: quotes, backslashes and control characters escaped, other characters raw or escaped. */
    private static String jsonString(Random r, String s) {
        StringBuilder out = new StringBuilder("\"");
        boolean escapeOthers = r.nextBoolean();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || c >= 0x80 && escapeOthers || Character.isSurrogate(c)) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }

    /** A JSON string or name with each of its characters written as a \\u escape: the same string to a parser. */
    private static String escapeAll(String json) {
        String s = unquoted(json);
        StringBuilder out = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            out.append(String.format("\\u%04x", (int) s.charAt(i)));
        }
        return out.append('"').toString();
    }

    /** A path segment: every character outside RFC 3986's unreserved set percent-encoded as UTF-8. */
    private static String pathSegment(String s) {
        StringBuilder out = new StringBuilder();
        for (byte b : bytes(s)) {
            int c = b & 0xFF;
            if (c < 0x80 && (Character.isLetterOrDigit(c) || c == '-' || c == '.' || c == '_' || c == '~')) {
                out.append((char) c);
            } else {
                out.append('%').append(String.format("%02X", c));
            }
        }
        return out.toString();
    }

    static String raw(int... bytes) {
        StringBuilder s = new StringBuilder();
        for (int b : bytes) {
            s.append((char) (RAW + b));
        }
        return s.toString();
    }

    /**
     * UTF-8, except that chars U+E000 to U+E0FF stand for raw bytes and a lone surrogate becomes the three
     * bytes UTF-8 would give its code point (invalid UTF-8, which is what it is there for).
     */
    static byte[] bytes(String s) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length() + 16);
        for (int i = 0; i < s.length();) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cp >= RAW && cp <= RAW + 0xFF) {
                out.write(cp - RAW);
            } else if (cp < 0x80) {
                out.write(cp);
            } else if (cp < 0x800) {
                out.write(0xC0 | cp >> 6);
                out.write(0x80 | cp & 0x3F);
            } else if (cp < 0x10000) {
                out.write(0xE0 | cp >> 12);
                out.write(0x80 | cp >> 6 & 0x3F);
                out.write(0x80 | cp & 0x3F);
            } else {
                out.write(0xF0 | cp >> 18);
                out.write(0x80 | cp >> 12 & 0x3F);
                out.write(0x80 | cp >> 6 & 0x3F);
                out.write(0x80 | cp & 0x3F);
            }
        }
        return out.toByteArray();
    }

    @SafeVarargs
    private static <T> T pick(Random r, T... options) {
        return options[r.nextInt(options.length)];
    }

    private static <T> T pick(Random r, List<T> options) {
        return options.get(r.nextInt(options.size()));
    }
}
