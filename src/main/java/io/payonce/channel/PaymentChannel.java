package io.payonce.channel;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.ws.rs.client.ClientRequestFilter;
import jakarta.ws.rs.core.Response;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.client.api.QuarkusRestClientProperties;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.payonce.PayOnceConfig;
import io.payonce.PayOnceConfig.Gateway.ClientAuth;
import io.payonce.observability.LatencyHistograms;
import io.quarkus.rest.client.reactive.QuarkusRestClientBuilder;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.tls.TlsConfiguration;
import io.quarkus.tls.TlsConfigurationRegistry;
import io.smallrye.mutiny.Uni;

/**
 * The client of the payment channel. Every call carries the payment's own {@code request_no} (a refund's
 * own {@code refund_no}); a query or a retry reuses it, so the channel can never charge one request, or
 * refund one refund, twice.
 */
@ApplicationScoped
public class PaymentChannel {

    private static final Logger LOG = Logger.getLogger(PaymentChannel.class);
    /** What payments.channel_txn_id holds: printable ASCII, at most 255 characters. */
    private static final Pattern TXN_ID = Pattern.compile("[\\x21-\\x7E]{1,255}");
    private static final List<String> OUTCOMES = List.of("answered", "not_accepted", "unknown");

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
    private volatile ChannelApi api;

    PaymentChannel(PayOnceConfig config, ObjectMapper json, MeterRegistry meters,
            @ConfigProperty(name = "quarkus.http.port") int httpPort, TlsConfigurationRegistry tls) {
        this.config = config;
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
        return call(Call.CHARGE, () -> api().charge(merchantId,
                new ChannelApi.ChargeRequest(merchantId, orderNo, requestNo, amount, currency)));
    }

    /** Asks what became of the number; never charges. */
    public Uni<ChargeResult> query(String merchantId, String requestNo) {
        return call(Call.QUERY, () -> api().query(merchantId, requestNo));
    }

    /** Closes the number: {@link ChargeResult.Closed}, or {@link ChargeResult.Succeeded} when it was charged. */
    public Uni<ChargeResult> close(String merchantId, String requestNo) {
        return call(Call.CLOSE, () -> api().close(merchantId, requestNo));
    }

    /** Sends the refund; the channel's idempotency makes sending the same number again safe. */
    public Uni<ChargeResult> refund(String merchantId, String orderNo, String refundNo, long amount, String currency) {
        return call(Call.REFUND, () -> api().refund(merchantId,
                new ChannelApi.RefundRequest(merchantId, orderNo, refundNo, amount, currency)));
    }

    /** Asks what became of the refund number; never refunds. */
    public Uni<ChargeResult> queryRefund(String merchantId, String refundNo) {
        return call(Call.REFUND_QUERY, () -> api().queryRefund(merchantId, refundNo));
    }

    /** Closes the refund number: {@link ChargeResult.Closed}, or {@link ChargeResult.Succeeded} when it was refunded. */
    public Uni<ChargeResult> closeRefund(String merchantId, String refundNo) {
        return call(Call.REFUND_CLOSE, () -> api().closeRefund(merchantId, refundNo));
    }

    private Uni<ChargeResult> call(Call call, Supplier<Uni<? extends Response>> request) {
        return Uni.createFrom().deferred(() -> {
            Timer.Sample sample = Timer.start();
            return Uni.createFrom().deferred(request)
                    .ifNoItem().after(config.channel().timeout()).fail()
                    .map(response -> told(response, call.words))
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
     * What an answer says, whichever call it answers. Only the channel's own words count: a state in a
     * well-formed body with the status that goes with it, or an error with the channel's code. Anything
     * else (a proxy's 404 or error page, a wrong path, a 5xx) says nothing, and so may hide a charge.
     */
    private ChargeResult told(Response response, Words words) {
        JsonNode body = body(response);
        int status = response.getStatus();
        String state = body == null ? null : text(body, "status");
        String code = body == null ? null : text(body, "code");
        if (status == 200 && "SUCCEEDED".equals(state)) {
            return new ChargeResult.Succeeded(txnId(body, words));
        }
        if (status == 200 && "DECLINED".equals(state)) {
            return new ChargeResult.Declined(txnId(body, words));
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
            return new ChargeResult.Succeeded(txnId(body, words));
        }
        if (status == 503 && "not_accepted".equals(code)) {
            return new ChargeResult.NotAccepted("channel refused before accepting");
        }
        return new ChargeResult.Unknown("channel answered " + status + (code == null ? "" : " " + code));
    }

    /** The answer's JSON body, or null when it has none that parses (an error page of a proxy, say). */
    private JsonNode body(Response response) {
        try {
            if (!response.hasEntity()) {
                return null;
            }
            JsonNode body = json.readTree(response.readEntity(String.class));
            return body != null && body.isObject() ? body : null;
        } catch (IOException | RuntimeException notJson) {
            return null;
        }
    }

    private static String text(JsonNode body, String field) {
        JsonNode value = body.get(field);
        return value != null && value.isTextual() ? value.asText() : null;
    }

    /**
     * The channel's transaction id, or null when it gave none that can be stored and shown (too long, or
     * not printable ASCII): the outcome is the channel's word and settles the payment either way, so an
     * unusable id must not keep a charged payment unsettled.
     */
    private static String txnId(JsonNode body, Words words) {
        String id = text(body, words.id());
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
        api();
    }

    private ChannelApi api() {
        ChannelApi current = api;
        if (current == null) {
            synchronized (this) {
                if (api == null) {
                    api = build();
                }
                current = api;
            }
        }
        return current;
    }

    private ChannelApi build() {
        URI url = URI.create(baseUrl(config, httpPort).orElseThrow(ChannelUrlMissingException::new));
        long timeoutMs = config.channel().timeout().toMillis();
        String header = config.merchantHeader();
        ClientRequestFilter renameMerchantHeader = request -> {
            if (!header.equalsIgnoreCase(ChannelApi.MERCHANT_HEADER)) {
                Object merchant = request.getHeaders().getFirst(ChannelApi.MERCHANT_HEADER);
                request.getHeaders().remove(ChannelApi.MERCHANT_HEADER);
                request.getHeaders().putSingle(header, merchant);
            }
        };
        QuarkusRestClientBuilder builder = QuarkusRestClientBuilder.newBuilder()
                .baseUri(url)
                .connectTimeout(timeoutMs, TimeUnit.MILLISECONDS)
                .readTimeout(timeoutMs, TimeUnit.MILLISECONDS)
                .disableDefaultMapper(true)
                .property(QuarkusRestClientProperties.CONNECTION_POOL_SIZE, config.channel().maxConnections())
                .register(renameMerchantHeader);
        sandboxTls(url).ifPresent(builder::tlsConfiguration);
        return builder.build(ChannelApi.class);
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
