package io.payonce.support;

import static io.restassured.RestAssured.given;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

import javax.net.ssl.SSLContext;

import org.apache.http.conn.ssl.SSLSocketFactory;

import io.restassured.config.HttpClientConfig;
import io.restassured.config.RestAssuredConfig;
import io.restassured.config.SSLConfig;
import io.restassured.http.ContentType;
import io.restassured.path.json.JsonPath;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;

/**
 * One merchant's HTTP client of one PayOnce instance, as the recovery tests drive it: orders, tokens,
 * payments whose answer may also be a broken connection, the sandbox's behaviour and the books (order,
 * payment records and the channel's ledger) read back afterwards. Every call is bounded in time.
 */
public final class PayClient {

    public static final long AMOUNT = 2500;
    public static final String CURRENCY = "EUR";
    /** Longer than a duplicate's wait bound (10 s) plus a slow charge: a pay call always ends by then. */
    private static final Duration PAY_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(5);

    private final String baseUri;
    private final int port;
    private final String merchant;
    /** Headers every call carries besides the merchant's, such as the gateway's API key. */
    private final Map<String, String> headers;
    /** The client's TLS for an https base, or null. */
    private final SSLConfig tls;

    public PayClient(AppProcess app, String merchant) {
        this(app.port(), merchant);
    }

    /** A client of an instance's business port over plain HTTP (client-auth none). */
    public PayClient(int port, String merchant) {
        this("http://127.0.0.1", port, merchant, Map.of(), null);
    }

    private PayClient(String baseUri, int port, String merchant, Map<String, String> headers, SSLConfig tls) {
        this.baseUri = baseUri;
        this.port = port;
        this.merchant = merchant;
        this.headers = headers;
        this.tls = tls;
    }

    /**
     * A client of an instance's business port under client-auth mtls, speaking TLS with {@code context} (such
     * as {@link DevCa#client}, presenting the gateway's certificate) as the gateway does.
     */
    public static PayClient overMtls(int port, String merchant, SSLContext context) {
        SSLConfig tls = SSLConfig.sslConfig().sslSocketFactory(
                new SSLSocketFactory(context, SSLSocketFactory.STRICT_HOSTNAME_VERIFIER));
        return new PayClient("https://localhost", port, merchant, Map.of(), tls);
    }

    /**
     * A client of the gateway on {@code port}, with {@code merchant}'s API key; it also names its merchant,
     * which the gateway lets through when it is the key's.
     */
    public static PayClient throughGateway(int port, String merchant, String apiKey) {
        return new PayClient("http://127.0.0.1", port, merchant, Map.of("X-Api-Key", apiKey), null);
    }

    /** The books of one order after the fact: the service's order and payment records, and the channel's ledger. */
    public record Books(String orderStatus, List<Map<String, String>> payments, long charges, long attempts) {

        public long paymentsFor(String requestNo) {
            return payments.stream().filter(p -> requestNo.equals(p.get("request_no"))).count();
        }

        public String paymentStatus(String requestNo) {
            return payments.stream().filter(p -> requestNo.equals(p.get("request_no"))).map(p -> p.get("status"))
                    .findFirst().orElse(null);
        }

        public boolean settled() {
            return !"PAYING".equals(orderStatus) && payments.stream().noneMatch(p -> "PROCESSING".equals(p.get("status")));
        }

        @Override
        public String toString() {
            return "order " + orderStatus + ", payments " + payments + ", ledger " + charges + " charge(s) of "
                    + attempts + " attempt(s)";
        }
    }

    /** The channel's ledger for one order: distinct successful charges, and charge calls that arrived. */
    public record Ledger(long charges, long attempts) {
    }

    public RequestSpecification call(Duration timeout) {
        int ms = (int) timeout.toMillis();
        RestAssuredConfig config = RestAssuredConfig.config().httpClient(HttpClientConfig.httpClientConfig()
                .setParam("http.connection.timeout", 2_000)
                .setParam("http.socket.timeout", ms));
        if (tls != null) {
            config = config.sslConfig(tls);
        }
        return given().config(config).baseUri(baseUri).port(port).header("X-Merchant-Id", merchant)
                .headers(headers).contentType(ContentType.JSON);
    }

    /** A PENDING order and a fresh token for it, each with its own number. */
    public PayRequest newRequest() {
        String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 16);
        String orderNo = "ord_" + suffix;
        call(CALL_TIMEOUT).body(Map.of("order_no", orderNo, "amount", AMOUNT, "currency", CURRENCY)).post("/orders")
                .then().statusCode(201);
        String token = call(CALL_TIMEOUT).post("/tokens").then().statusCode(201).extract().path("token");
        return new PayRequest(orderNo, "req_" + suffix, token, AMOUNT);
    }

    public List<PayRequest> newRequests(int count) {
        List<PayRequest> requests = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            requests.add(newRequest());
        }
        return requests;
    }

    /** POST /pay of the request; a broken connection is an answer too, never an exception. */
    public Answer pay(PayRequest request) {
        return Answer.of(() -> request.on(call(PAY_TIMEOUT)).post("/pay"));
    }

    /** {@link #pay} asking, with {@code Prefer: wait=N}, to wait at most {@code seconds} for a first execution. */
    public Answer payPreferringWait(PayRequest request, int seconds, Duration timeout) {
        return Answer.of(() -> request.on(call(timeout)).header("Prefer", "wait=" + seconds).post("/pay"));
    }

    /**
     * Pays, and sends the same request again with the same token while the answer is not final (202, a
     * 503 or 409 request_in_progress, or no answer at all), until {@code bound} has passed; answers the
     * last answer.
     */
    public Answer payUntilFinal(PayRequest request, Duration bound) {
        return Await.upTo(bound, () -> pay(request),
                answer -> !answer.isRetryable() && answer.answered() && answer.status() != 202);
    }

    /** {@link #payUntilFinal} on one of {@code threads}. */
    public CompletableFuture<Answer> payUntilFinalAsync(PayRequest request, Duration bound, Executor threads) {
        return CompletableFuture.supplyAsync(() -> payUntilFinal(request, bound), threads);
    }

    /** The next {@code count} charges at this instance's sandbox take {@code mode} after {@code latencyMs}. */
    public void sandbox(String mode, long latencyMs, int count) {
        call(CALL_TIMEOUT).body(Map.of("mode", mode, "latency_ms", latencyMs, "count", count)).put("/sandbox/behavior")
                .then().statusCode(200);
    }

    /** Reads the books; the ledger comes from this instance's sandbox, which reads the shared ledger table. */
    public Books books(String orderNo) {
        JsonPath order = call(CALL_TIMEOUT).get("/orders/" + orderNo).then().statusCode(200).extract().jsonPath();
        JsonPath ledger = call(CALL_TIMEOUT).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().statusCode(200).extract().jsonPath();
        return new Books(order.getString("status"), order.getList("payments"), ledger.getLong("charges"),
                ledger.getLong("attempts"));
    }

    public Ledger ledger(String orderNo) {
        JsonPath ledger = call(CALL_TIMEOUT).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().statusCode(200).extract().jsonPath();
        return new Ledger(ledger.getLong("charges"), ledger.getLong("attempts"));
    }

    /** The transaction id the channel recorded for the request number, or null when it has no charge. */
    public String channelTxnId(String requestNo) {
        Response r = call(CALL_TIMEOUT).get("/sandbox/charges/" + requestNo);
        return r.statusCode() == 200 ? r.jsonPath().getString("txn_id") : null;
    }

    /**
     * The channel's word on one request number, as the sandbox's query or charge call gave it: {@code status}
     * (SUCCEEDED, DECLINED, PENDING or CLOSED) in a well-formed answer, or a problem's {@code code}.
     */
    public record ChannelCharge(int httpStatus, String status, String code, String txnId) {

        public boolean is(String expected) {
            return expected.equals(status);
        }

        @Override
        public String toString() {
            return httpStatus + " " + (status != null ? status : code) + (txnId != null ? " " + txnId : "");
        }
    }

    /** A payment record as {@code GET /payments/{request_no}} shows it. */
    public record PaymentRecord(String status, String channelTxnId) {
    }

    /** The same order paid again as a client does after a failure: a fresh request number and a fresh token. */
    public PayRequest newAttempt(PayRequest earlier) {
        String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 16);
        String token = call(CALL_TIMEOUT).post("/tokens").then().statusCode(201).extract().path("token");
        return earlier.again("req_" + suffix, token);
    }

    /** The payment record of {@code requestNo}, or null when there is none. */
    public PaymentRecord payment(String requestNo) {
        Response r = call(CALL_TIMEOUT).get("/payments/" + requestNo);
        if (r.statusCode() == 404) {
            return null;
        }
        JsonPath json = r.then().statusCode(200).extract().jsonPath();
        return new PaymentRecord(json.getString("status"), json.getString("channel_txn_id"));
    }

    /** The payment's status, or null when there is no payment record. */
    public String paymentStatus(String requestNo) {
        PaymentRecord payment = payment(requestNo);
        return payment == null ? null : payment.status();
    }

    /** Asks this instance's sandbox what became of a request number: the query reconciliation makes. */
    public ChannelCharge queryCharge(String requestNo) {
        return channelCharge(call(CALL_TIMEOUT).get("/sandbox/charges/" + requestNo));
    }

    /**
     * Sends the request's charge to this instance's sandbox, as the service's channel client does: same
     * merchant, order, request number and amount. A repeat of a recorded number charges nothing and tells
     * the charge's state.
     */
    public ChannelCharge chargeAtChannel(PayRequest request) {
        return channelCharge(call(CALL_TIMEOUT).body(request.charge(merchant, CURRENCY)).post("/sandbox/charges"));
    }

    private static ChannelCharge channelCharge(Response r) {
        String body = r.asString();
        if (body == null || !body.startsWith("{")) {
            return new ChannelCharge(r.statusCode(), null, null, null);
        }
        // a problem's "status" member is the HTTP status, not the charge's: a problem has a code instead
        JsonPath json = JsonPath.from(body);
        boolean problem = r.statusCode() >= 400;
        return new ChannelCharge(r.statusCode(), problem ? null : json.getString("status"),
                problem ? json.getString("code") : null, json.getString("txn_id"));
    }


    /** One refund a client means to make: its order, its own refund number, its own token and the amount. */
    public record RefundRequest(String orderNo, String refundNo, String token, long amount) {

        public Map<String, Object> body() {
            return Map.of("order_no", orderNo, "refund_no", refundNo, "amount", amount);
        }

        /** {@code spec} carrying this refund: its token as an Idempotency-Key structured-field string, and its body. */
        public RequestSpecification on(RequestSpecification spec) {
            return spec.header("Idempotency-Key", "\"" + token + "\"").body(body());
        }

        @Override
        public String toString() {
            return refundNo + " of " + amount + " on " + orderNo;
        }
    }

    /** An order as {@code GET /orders/{order_no}} shows its refunds: status, refunded amount, refund records. */
    public record OrderRefunds(String status, long refundedAmount, List<Map<String, Object>> refunds) {
    }

    /**
     * The channel's refund ledger for one order: distinct successful refunds, the amount they gave back, and
     * refund calls that arrived; with the charges beside them.
     */
    public record RefundLedger(long charges, long refunds, long refundedAmount, long refundAttempts) {
    }

    /** A paid order: a new order paid through this instance, its payment answered 200. */
    public PayRequest paidOrder() {
        PayRequest payment = newRequest();
        Answer paid = pay(payment);
        if (paid.status() != 200) {
            throw new AssertionError("paying " + payment.orderNo() + " failed: " + paid);
        }
        return payment;
    }

    /** A refund of {@code amount} of the order, with a fresh token and a refund number of its own. */
    public RefundRequest newRefund(String orderNo, long amount) {
        String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 16);
        String token = call(CALL_TIMEOUT).post("/tokens").then().statusCode(201).extract().path("token");
        return new RefundRequest(orderNo, "rfd_" + suffix, token, amount);
    }

    /** POST /refunds of the refund; a broken connection is an answer too, never an exception. */
    public Answer refund(RefundRequest refund) {
        return Answer.of(() -> refund.on(call(PAY_TIMEOUT)).post("/refunds"));
    }

    /** {@link #payUntilFinal} for a refund: the same refund again while the answer is not final, within {@code bound}. */
    public Answer refundUntilFinal(RefundRequest refund, Duration bound) {
        return Await.upTo(bound, () -> refund(refund),
                answer -> !answer.isRetryable() && answer.answered() && answer.status() != 202);
    }

    /** The next {@code count} refunds at this instance's sandbox take {@code mode} after {@code latencyMs}. */
    public void refundBehavior(String mode, long latencyMs, int count) {
        call(CALL_TIMEOUT).body(Map.of("operation", "refund", "mode", mode, "latency_ms", latencyMs, "count", count))
                .put("/sandbox/behavior").then().statusCode(200);
    }

    public OrderRefunds orderRefunds(String orderNo) {
        JsonPath order = call(CALL_TIMEOUT).get("/orders/" + orderNo).then().statusCode(200).extract().jsonPath();
        return new OrderRefunds(order.getString("status"), order.getLong("refunded_amount"), order.getList("refunds"));
    }

    /** The refund's status as {@code GET /refunds/{refund_no}} shows it, or null when there is no such refund. */
    public String refundStatus(String refundNo) {
        Response r = call(CALL_TIMEOUT).get("/refunds/" + refundNo);
        return r.statusCode() == 404 ? null : r.then().statusCode(200).extract().path("status");
    }

    /** The refund id the channel recorded for the refund number, or null when it has none. */
    public String channelRefundId(String refundNo) {
        Response r = call(CALL_TIMEOUT).get("/sandbox/refunds/" + refundNo);
        return r.statusCode() == 200 ? r.jsonPath().getString("refund_id") : null;
    }

    /** Reads the refund ledger from this instance's sandbox, which reads the shared ledger table. */
    public RefundLedger refundLedger(String orderNo) {
        JsonPath ledger = call(CALL_TIMEOUT).queryParam("order_no", orderNo).get("/sandbox/charges")
                .then().statusCode(200).extract().jsonPath();
        return new RefundLedger(ledger.getLong("charges"), ledger.getLong("refunds"), ledger.getLong("refunded_amount"),
                ledger.getLong("refund_attempts"));
    }
}
