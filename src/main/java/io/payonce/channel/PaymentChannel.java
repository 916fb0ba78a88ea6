package io.payonce.channel;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.payonce.PayOnceConfig;
import io.payonce.PayOnceConfig.Gateway.ClientAuth;
import io.payonce.observability.LatencyHistograms;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.tls.TlsConfiguration;
import io.quarkus.tls.TlsConfigurationRegistry;
import io.quarkus.tls.runtime.config.TlsConfigUtils;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.vertx.UniHelper;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;

/**
 * The client of the payment channel. Every call carries the payment's own {@code request_no} (a refund's
 * own {@code refund_no}); a query or a retry reuses it, so the channel can never charge one request, or
 * refund one refund, twice.
 *
 * <p>The channel's HTTP API (the sandbox serves the same shape), each call with the merchant in the
 * configured merchant header: {@code POST /charges} and {@code POST /refunds} with a JSON body of
 * {@code merchant_id}, {@code order_no}, {@code request_no} (or {@code refund_no}), {@code amount} and
 * {@code currency}; {@code GET /charges/{request_no}} and {@code GET /refunds/{refund_no}} to ask;
 * {@code POST .../close} to fence a number off. The calls go through Vert.x's HTTP client directly, the
 * body written and the answer read by a streaming parser, without a REST client's invocation machinery
 * (filters, entity providers serialising by reflection, a response object, a tree): work that the native
 * executable, compiled without profiles, pays in full on every payment.
 */
@ApplicationScoped
public class PaymentChannel {

    private static final Logger LOG = Logger.getLogger(PaymentChannel.class);
    /** What payments.channel_txn_id holds: printable ASCII, at most 255 characters. */
    private static final Pattern TXN_ID = Pattern.compile("[\\x21-\\x7E]{1,255}");
    private static final List<String> OUTCOMES = List.of("answered", "not_accepted", "unknown");
    private static final CharSequence APPLICATION_JSON = HttpHeaders.createOptimized("application/json");

    /**
     * Thrown at start when no channel URL is set and the sandbox is off: there is nowhere to charge, and the
     * service refuses to start rather than guess, naming the key to set.
     */
    public static final class ChannelUrlMissingException extends RuntimeException {
        ChannelUrlMissingException() {
            super("refusing to start: no payment channel: set payonce.channel.url (or payonce.sandbox.enabled=true"
                    + " for a test deployment)", null, false, false);
        }
    }

    private final PayOnceConfig config;
    private final ObjectMapper json;
    private final int httpPort;
    private final TlsConfigurationRegistry tls;
    /** Each call's duration, by call and by what it came to, each a latency histogram, from the start. */
    private final Map<Call, Map<String, Timer>> calls = new EnumMap<>(Call.class);
    private final Vertx vertx;
    private volatile Endpoint endpoint;

    PaymentChannel(PayOnceConfig config, ObjectMapper json, MeterRegistry meters,
            @ConfigProperty(name = "quarkus.http.port") int httpPort, TlsConfigurationRegistry tls, Vertx vertx) {
        this.config = config;
        this.vertx = vertx;
        this.json = json;
        this.httpPort = httpPort;
        this.tls = tls;
        for (Call call : Call.values()) {
            Map<String, Timer> byOutcome = new HashMap<>();
            for (String outcome : OUTCOMES) {
                byOutcome.put(outcome, LatencyHistograms.timer("payonce.channel.calls")
                        .description("calls to the payment channel, from sending to its answer or the timeout")
                        .tags("call", call.name().toLowerCase(Locale.ROOT), "outcome", outcome).register(meters));
            }
            calls.put(call, byOutcome);
        }
    }

    /** The calls, as the timer's {@code call} tag names them, each with the words its answers use. */
    private enum Call {
        CHARGE(Words.CHARGES), QUERY(Words.CHARGES), CLOSE(Words.CHARGES),
        REFUND(Words.REFUNDS), REFUND_QUERY(Words.REFUNDS), REFUND_CLOSE(Words.REFUNDS);

        final Words words;

        Call(Words words) {
            this.words = words;
        }
    }

    /**
     * How the channel names, for charges or for refunds, the id of what it did and the codes that say a
     * number never arrived or cannot be closed because it succeeded.
     */
    private record Words(String id, String notFound, String succeeded) {
        static final Words CHARGES = new Words("txn_id", "charge_not_found", "charge_succeeded");
        static final Words REFUNDS = new Words("refund_id", "refund_not_found", "refund_succeeded");
    }

    /**
     * Where charges go: the channel set, else this instance's own sandbox while it is on (on its business port,
     * so over https under client-auth mtls), else nowhere.
     */
    static Optional<String> baseUrl(PayOnceConfig config, int httpPort) {
        String scheme = config.gateway().clientAuth() == ClientAuth.MTLS ? "https" : "http";
        return config.channel().url().or(() -> config.sandbox().enabled()
                ? Optional.of(scheme + "://localhost:" + httpPort + "/sandbox")
                : Optional.empty());
    }

    /** Sends the charge; the channel's idempotency makes sending the same number again safe. */
    public Uni<ChargeResult> charge(String merchantId, String orderNo, String requestNo, long amount, String currency) {
        return call(Call.CHARGE, HttpMethod.POST, "/charges", merchantId,
                order(merchantId, orderNo, "request_no", requestNo, amount, currency));
    }

    /** Asks what became of the number; never charges. */
    public Uni<ChargeResult> query(String merchantId, String requestNo) {
        return call(Call.QUERY, HttpMethod.GET, "/charges/" + segment(requestNo), merchantId, null);
    }

    /** Closes the number: {@link ChargeResult.Closed}, or {@link ChargeResult.Succeeded} when it was charged. */
    public Uni<ChargeResult> close(String merchantId, String requestNo) {
        return call(Call.CLOSE, HttpMethod.POST, "/charges/" + segment(requestNo) + "/close", merchantId, null);
    }

    /** Sends the refund; the channel's idempotency makes sending the same number again safe. */
    public Uni<ChargeResult> refund(String merchantId, String orderNo, String refundNo, long amount, String currency) {
        return call(Call.REFUND, HttpMethod.POST, "/refunds", merchantId,
                order(merchantId, orderNo, "refund_no", refundNo, amount, currency));
    }

    /** Asks what became of the refund number; never refunds. */
    public Uni<ChargeResult> queryRefund(String merchantId, String refundNo) {
        return call(Call.REFUND_QUERY, HttpMethod.GET, "/refunds/" + segment(refundNo), merchantId, null);
    }

    /** Closes the refund number: {@link ChargeResult.Closed}, or {@link ChargeResult.Succeeded} when it was refunded. */
    public Uni<ChargeResult> closeRefund(String merchantId, String refundNo) {
        return call(Call.REFUND_CLOSE, HttpMethod.POST, "/refunds/" + segment(refundNo) + "/close", merchantId, null);
    }

    /**
     * A charge's or a refund's body, written directly: five members of fixed names, the strings quoted by
     * Jackson's encoder. {@code numberName} is the merchant's number's member ({@code request_no},
     * {@code refund_no}).
     */
    static Buffer order(String merchantId, String orderNo, String numberName, String number, long amount,
            String currency) {
        StringBuilder body = new StringBuilder(160).append("{\"merchant_id\":");
        quoted(body, merchantId).append(",\"order_no\":");
        quoted(body, orderNo).append(",\"").append(numberName).append("\":");
        quoted(body, number).append(",\"amount\":").append(amount).append(",\"currency\":");
        quoted(body, currency).append('}');
        return Buffer.buffer(body.toString());
    }

    private static StringBuilder quoted(StringBuilder body, String value) {
        body.append('"');
        JsonStringEncoder.getInstance().quoteAsString(value, body);
        return body.append('"');
    }

    /**
     * A number as one path segment: the identifiers the API accepts pass as they are, anything else
     * percent-encoded (form encoding's {@code +} for a space is no path's, so it becomes {@code %20}).
     */
    static String segment(String value) {
        return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
    }

    private Uni<ChargeResult> call(Call call, HttpMethod method, String path, String merchantId, Buffer body) {
        return Uni.createFrom().deferred(() -> {
            Timer.Sample sample = Timer.start();
            return UniHelper.toUni(send(call, method, path, merchantId, body))
                    .ifNoItem().after(config.channel().timeout()).fail()
                    .onFailure().recoverWithItem(PaymentChannel::unanswered)
                    .invoke(result -> sample.stop(calls.get(call).get(outcome(result))));
        });
    }

    /** The timer's {@code outcome}: the channel's word, a refusal before accepting, or nothing clear. */
    private static String outcome(ChargeResult result) {
        return result instanceof ChargeResult.NotAccepted ? "not_accepted"
                : result instanceof ChargeResult.Unknown ? "unknown" : "answered";
    }

    /**
     * One request on the pooled client, the answer read whole (answers are small) and told. The request's
     * own idle timeout is the channel timeout, so a connection that stops answering is given up, not held.
     */
    private Future<ChargeResult> send(Call call, HttpMethod method, String path, String merchantId, Buffer body) {
        Endpoint endpoint = endpoint();
        RequestOptions request = new RequestOptions()
                .setMethod(method)
                .setHost(endpoint.host())
                .setPort(endpoint.port())
                .setURI(endpoint.basePath() + path)
                .setIdleTimeout(endpoint.timeoutMs())
                .putHeader(endpoint.merchantHeader(), merchantId)
                .putHeader(HttpHeaders.ACCEPT, APPLICATION_JSON);
        if (body != null) {
            request.putHeader(HttpHeaders.CONTENT_TYPE, APPLICATION_JSON);
        }
        return endpoint.client().request(request)
                .compose(sent -> body == null ? sent.send() : sent.send(body))
                .compose(response -> response.body()
                        .map(answer -> told(response.statusCode(), answer, call.words)));
    }

    /** The words of an answer's body that can mean anything; all null when it has none that parses. */
    private record Answer(String status, String code, String id) {
        static final Answer NONE = new Answer(null, null, null);
    }

    /**
     * What an answer says, whichever call it answers. Only the channel's own words count: a state in a
     * well-formed body with the status that goes with it, or an error with the channel's code. Anything
     * else (a proxy's 404 or error page, a wrong path, a 5xx) says nothing, and so may hide a charge.
     */
    private ChargeResult told(int status, Buffer body, Words words) {
        Answer answer = read(body, words);
        String state = answer.status();
        String code = answer.code();
        if (status == 200 && "SUCCEEDED".equals(state)) {
            return new ChargeResult.Succeeded(txnId(answer));
        }
        if (status == 200 && "DECLINED".equals(state)) {
            return new ChargeResult.Declined(txnId(answer));
        }
        if ((status == 200 || status == 202) && "PENDING".equals(state)) {
            return new ChargeResult.Pending();
        }
        if (status == 200 && "CLOSED".equals(state)) {
            return new ChargeResult.Closed();
        }
        if (status == 404 && words.notFound().equals(code)) {
            return new ChargeResult.NotFound();
        }
        if (status == 409 && words.succeeded().equals(code)) {
            return new ChargeResult.Succeeded(txnId(answer));
        }
        if (status == 503 && "not_accepted".equals(code)) {
            return new ChargeResult.NotAccepted("channel refused before accepting");
        }
        return new ChargeResult.Unknown("channel answered " + status + (code == null ? "" : " " + code));
    }

    /**
     * The members {@link #told} reads, from a body that is one JSON object under the application's rules
     * (a member given twice, or anything after the object, makes it no body); a member that is not a
     * string counts as absent. Read by a streaming parser: the rest of the body is skipped, never built.
     */
    private Answer read(Buffer body, Words words) {
        if (body == null || body.length() == 0) {
            return Answer.NONE;
        }
        try (JsonParser parser = json.getFactory().createParser(body.getBytes())) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                return Answer.NONE;
            }
            String status = null;
            String code = null;
            String id = null;
            JsonToken token;
            while ((token = parser.nextToken()) == JsonToken.FIELD_NAME) {
                String name = parser.currentName();
                JsonToken value = parser.nextToken();
                String text = value == JsonToken.VALUE_STRING ? parser.getText() : null;
                parser.skipChildren();
                if ("status".equals(name)) {
                    status = text;
                } else if ("code".equals(name)) {
                    code = text;
                } else if (words.id().equals(name)) {
                    id = text;
                }
            }
            return token == JsonToken.END_OBJECT && parser.nextToken() == null
                    ? new Answer(status, code, id) : Answer.NONE;
        } catch (IOException | RuntimeException notJson) {
            return Answer.NONE;
        }
    }

    /**
     * The channel's transaction id, or null when it gave none that can be stored and shown (too long, or
     * not printable ASCII): the outcome is the channel's word and settles the payment either way, so an
     * unusable id must not keep a charged payment unsettled.
     */
    private static String txnId(Answer answer) {
        String id = answer.id();
        if (id == null || TXN_ID.matcher(id).matches()) {
            return id;
        }
        LOG.errorf("the channel gave a transaction id that cannot be stored (%d characters); kept without it",
                id.length());
        return null;
    }

    /** A connection that never opened cannot have charged; any later silence might have. */
    private static ChargeResult unanswered(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof ConnectException || t instanceof UnknownHostException) {
                return new ChargeResult.NotAccepted("channel unreachable: " + t.getMessage());
            }
        }
        LOG.warnf("channel outcome unknown: %s", failure.toString());
        return new ChargeResult.Unknown(failure.toString());
    }

    /**
     * Built at start, not on the first payment: its set-up would otherwise count against a charge's timeout; and
     * a service with nowhere to charge refuses to start ({@link ChannelUrlMissingException}).
     */
    void onStart(@Observes StartupEvent event) {
        endpoint();
    }

    /** Where and how the calls go: the pooled client, the channel's address and what every request carries. */
    private record Endpoint(HttpClient client, String host, int port, String basePath, long timeoutMs,
            CharSequence merchantHeader) {
    }

    private Endpoint endpoint() {
        Endpoint current = endpoint;
        if (current == null) {
            synchronized (this) {
                if (endpoint == null) {
                    endpoint = build();
                }
                current = endpoint;
            }
        }
        return current;
    }

    private Endpoint build() {
        URI url = URI.create(baseUrl(config, httpPort).orElseThrow(ChannelUrlMissingException::new));
        boolean https = "https".equalsIgnoreCase(url.getScheme());
        long timeoutMs = config.channel().timeout().toMillis();
        HttpClientOptions options = new HttpClientOptions()
                .setName("payonce-channel")
                .setSsl(https)
                .setConnectTimeout((int) Math.min(Integer.MAX_VALUE, timeoutMs));
        sandboxTls(url).ifPresent(tlsConfiguration -> TlsConfigUtils.configure(options, tlsConfiguration));
        HttpClient client = vertx.createHttpClient(options,
                new PoolOptions().setHttp1MaxSize(config.channel().maxConnections()));
        String path = url.getRawPath() == null ? "" : url.getRawPath();
        String basePath = path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
        int port = url.getPort() != -1 ? url.getPort() : https ? 443 : 80;
        return new Endpoint(client, url.getHost(), port, basePath, timeoutMs,
                HttpHeaders.createOptimized(config.merchantHeader()));
    }

    /**
     * The instance's own certificate and the operator's CA, for a sandbox under client-auth mtls: its
     * business port, where the sandbox is served, takes only callers with a certificate of that CA, and
     * presents one of it. A provider's channel (the sandbox off) is called with the JVM's trust, as the
     * operator's CA is not the provider's and the instance's certificate is nothing to the provider.
     */
    private Optional<TlsConfiguration> sandboxTls(URI url) {
        if (config.gateway().clientAuth() != ClientAuth.MTLS || !config.sandbox().enabled()
                || !"https".equalsIgnoreCase(url.getScheme())) {
            return Optional.empty();
        }
        return tls.get(PayOnceConfig.Gateway.TLS_CONFIGURATION);
    }
}
