package io.payonce.channel;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.concurrent.TimeUnit;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.ws.rs.client.ClientRequestFilter;
import jakarta.ws.rs.core.Response;

import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.client.api.QuarkusRestClientProperties;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.payonce.PayOnceConfig;
import io.quarkus.rest.client.reactive.QuarkusRestClientBuilder;
import io.quarkus.runtime.StartupEvent;
import io.smallrye.mutiny.Uni;

/**
 * The client of the payment channel. Every call carries the payment's own {@code request_no}; a query
 * or a retry reuses it, so the channel can never charge one request twice.
 */
@ApplicationScoped
public class PaymentChannel {

    private static final Logger LOG = Logger.getLogger(PaymentChannel.class);

    private final PayOnceConfig config;
    private final ObjectMapper json;
    private volatile ChannelApi api;

    PaymentChannel(PayOnceConfig config, ObjectMapper json) {
        this.config = config;
        this.json = json;
    }

    public Uni<ChargeResult> charge(String merchantId, String orderNo, String requestNo, long amount, String currency) {
        return Uni.createFrom().deferred(() -> api()
                .charge(merchantId, new ChannelApi.ChargeRequest(merchantId, orderNo, requestNo, amount, currency)))
                .ifNoItem().after(config.channel().timeout()).fail()
                .map(this::charged)
                .onFailure().recoverWithItem(PaymentChannel::unanswered);
    }

    public Uni<ChargeResult> query(String merchantId, String requestNo) {
        return Uni.createFrom().deferred(() -> api().query(merchantId, requestNo))
                .ifNoItem().after(config.channel().timeout()).fail()
                .map(response -> response.getStatus() == 404
                        ? new ChargeResult.NotFound()
                        : charged(response))
                .onFailure().recoverWithItem(PaymentChannel::unanswered);
    }

    private ChargeResult charged(Response response) {
        ChannelApi.ChannelCharge body = body(response);
        if (response.getStatus() == 200 && body != null && "SUCCEEDED".equals(body.status())) {
            return new ChargeResult.Succeeded(body.txnId());
        }
        if (response.getStatus() == 200 && body != null && "DECLINED".equals(body.status())) {
            return new ChargeResult.Declined(body.txnId());
        }
        if (response.getStatus() == 503 && body != null && "not_accepted".equals(body.code())) {
            return new ChargeResult.NotAccepted("channel refused before accepting");
        }
        // anything else may have been charged: only a query can tell
        return new ChargeResult.Unknown("channel answered " + response.getStatus());
    }

    /**
     * The channel's answer, or null when it is not one (an error page of a proxy, say). Read as text and
     * parsed loosely here: error answers come as application/problem+json, with a numeric status.
     */
    private ChannelApi.ChannelCharge body(Response response) {
        try {
            if (!response.hasEntity()) {
                return null;
            }
            JsonNode body = json.readTree(response.readEntity(String.class));
            return new ChannelApi.ChannelCharge(body.path("txn_id").asText(null), body.path("request_no").asText(null),
                    body.path("status").isTextual() ? body.path("status").asText() : null, body.path("code").asText(null));
        } catch (IOException | RuntimeException notACharge) {
            return null;
        }
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

    /** Built at start, not on the first payment: its set-up would otherwise count against a charge's timeout. */
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
        long timeoutMs = config.channel().timeout().toMillis();
        String header = config.merchantHeader();
        ClientRequestFilter renameMerchantHeader = request -> {
            if (!header.equalsIgnoreCase(ChannelApi.MERCHANT_HEADER)) {
                Object merchant = request.getHeaders().getFirst(ChannelApi.MERCHANT_HEADER);
                request.getHeaders().remove(ChannelApi.MERCHANT_HEADER);
                request.getHeaders().putSingle(header, merchant);
            }
        };
        return QuarkusRestClientBuilder.newBuilder()
                .baseUri(URI.create(config.channel().url()))
                .connectTimeout(timeoutMs, TimeUnit.MILLISECONDS)
                .readTimeout(timeoutMs, TimeUnit.MILLISECONDS)
                .disableDefaultMapper(true)
                .property(QuarkusRestClientProperties.CONNECTION_POOL_SIZE, config.channel().maxConnections())
                .register(renameMerchantHeader)
                .build(ChannelApi.class);
    }
}
