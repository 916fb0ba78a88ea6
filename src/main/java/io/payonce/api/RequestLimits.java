package io.payonce.api;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.eclipse.microprofile.config.inject.ConfigProperty;

import io.payonce.PayOnceConfig;
import io.quarkus.runtime.ShutdownDelayInitiatedEvent;
import io.quarkus.vertx.http.runtime.RouteConstants;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;

/**
 * What every request must be before anything reads it, on every route and ahead of both the replay route
 * and the REST layer: the merchant and the key named once at most; a body that declares its length (411 for
 * one sent in chunks), at most the contract's 16 KiB (413, before a byte of the body is read); and a body
 * that arrives in full within {@code payonce.http.body-timeout} (408), so that stalled or trickling clients
 * hold neither memory nor a request for long. Each refusal is problem+json; over HTTP/1.1 it closes the
 * connection, so the rest of such a body is never read.
 *
 * <p>And no new request at all once the instance is stopping, past its shutdown delay: 503
 * {@code temporarily_unavailable} with {@code Retry-After}. Quarkus serves whatever arrives until the process
 * exits (its graceful-shutdown filter only closes each connection after its answer), so under steady traffic
 * a stopping instance would take on new payments until its shutdown timeout cut them off mid-way. The delay
 * (readiness down, requests still served) gives balancers time to stop sending; a request that arrives after
 * it is refused before anything is done for it, and its client's retry goes to another instance, while the
 * requests in flight finish.
 */
@ApplicationScoped
public class RequestLimits {

    /** How long a refused request's remaining body is read and dropped before its connection is closed. */
    private static final long LINGER_MS = 2_000;
    /** As every retryable refusal of the service says it (Problems#retryable). */
    private static final Map<String, String> RETRY_AFTER = Map.of("Retry-After", "1");

    private final Problems problems;
    private final Vertx vertx;
    private final long bodyTimeoutMs;
    /** As a pre-hashed ASCII name: looked up on every request. */
    private final CharSequence merchantHeader;
    private final Duration shutdownDelay;
    private volatile boolean stopping;

    RequestLimits(Problems problems, Vertx vertx, PayOnceConfig config,
            @ConfigProperty(name = "quarkus.shutdown.delay") Optional<Duration> shutdownDelay) {
        this.problems = problems;
        this.vertx = vertx;
        this.bodyTimeoutMs = config.http().bodyTimeout().toMillis();
        this.merchantHeader = HttpHeaders.createOptimized(config.merchantHeader());
        this.shutdownDelay = shutdownDelay.orElse(Duration.ZERO);
    }

    /** Fired as the shutdown delay begins (quarkus.shutdown.delay-enabled): new requests refused when it ends. */
    void onShutdown(@Observes ShutdownDelayInitiatedEvent event) {
        if (shutdownDelay.toMillis() < 1) {
            stopping = true;
        } else {
            vertx.setTimer(shutdownDelay.toMillis(), id -> stopping = true);
        }
    }

    void register(@Observes Router router) {
        // ahead of Quarkus' own upload limit, whose refusal is a bare 413
        router.route().order(RouteConstants.ROUTE_ORDER_UPLOAD_LIMIT - 1).handler(this::limit);
    }

    private void limit(RoutingContext ctx) {
        HttpServerRequest request = ctx.request();
        if (stopping) {
            refuse(ctx, 503, "temporarily_unavailable", "Temporarily unavailable",
                    "this instance is stopping; send the request again", RETRY_AFTER);
            return;
        }
        // two merchants or two keys named: whichever one a reader took, another may have authorised the other;
        // refused here, ahead of both the replay route and the REST layer, so the answer never depends on
        // which of them would have answered
        if (request.headers().getAll(merchantHeader).size() > 1) {
            refuse(ctx, 401, "merchant_required", "Merchant not identified", "header " + merchantHeader + " must appear once");
            return;
        }
        if (request.headers().getAll(PayResource.IDEMPOTENCY_KEY_NAME).size() > 1) {
            refuse(ctx, 400, "idempotency_key_repeated", "Invalid request", "the Idempotency-Key header must appear once");
            return;
        }
        if (request.headers().contains(HttpHeaders.TRANSFER_ENCODING)) {
            // a body of unknown length could only be refused once too much of it was read
            refuse(ctx, 411, "length_required", "Length required",
                    "a body must declare its Content-Length, at most " + JsonBodies.MAX_BODY_BYTES + " bytes");
            return;
        }
        String declared = request.getHeader(HttpHeaders.CONTENT_LENGTH);
        if (declared != null && !withinLimit(declared)) {
            refuse(ctx, 413, "body_too_large", "Body too large",
                    "the body must be at most " + JsonBodies.MAX_BODY_BYTES + " bytes");
            return;
        }
        if (!request.isEnded()) {
            long timer = vertx.setTimer(bodyTimeoutMs, id -> {
                if (!request.isEnded() && !ctx.response().ended()) {
                    refuse(ctx, 408, "body_timeout", "Request body timeout",
                            "the body did not arrive within " + bodyTimeoutMs + " ms");
                }
            });
            ctx.addEndHandler(done -> vertx.cancelTimer(timer));
        }
        ctx.next();
    }

    /** A Content-Length that is a number no larger than the contract's limit (a malformed one never is). */
    private static boolean withinLimit(String declared) {
        if (declared.isEmpty() || declared.length() > 6) {
            return false;
        }
        for (int i = 0; i < declared.length(); i++) {
            if (declared.charAt(i) < '0' || declared.charAt(i) > '9') {
                return false;
            }
        }
        return Integer.parseInt(declared) <= JsonBodies.MAX_BODY_BYTES;
    }

    private void refuse(RoutingContext ctx, int status, String code, String title, String detail) {
        refuse(ctx, status, code, title, detail, Map.of());
    }

    private void refuse(RoutingContext ctx, int status, String code, String title, String detail,
            Map<String, String> headers) {
        HttpServerResponse response = ctx.response().setStatusCode(status)
                .putHeader(HttpHeaders.CONTENT_TYPE, Problems.MEDIA_TYPE);
        headers.forEach(response::putHeader);
        if (ctx.request().version() == HttpVersion.HTTP_2) {
            // one stream of many: ending it is enough, the connection serves the others
            response.end(problems.body(status, code, title, detail, Map.of()));
            return;
        }
        response.putHeader(HttpHeaders.CONNECTION, "close")
                .end(problems.body(status, code, title, detail, Map.of()))
                .onComplete(sent -> lingerThenClose(ctx.request()));
    }

    /**
     * Reads and drops what the client still sends, for a moment, before closing, as nginx's lingering close
     * does: a connection closed with unread bytes is reset, and a client still writing its body would lose
     * the answer with it.
     */
    private void lingerThenClose(HttpServerRequest request) {
        HttpConnection connection = request.connection();
        if (request.isEnded()) {
            connection.close();
            return;
        }
        long closer = vertx.setTimer(LINGER_MS, id -> connection.close());
        try {
            request.handler(dropped -> {
            }).endHandler(end -> {
                vertx.cancelTimer(closer);
                connection.close();
            });
            request.resume();
        } catch (IllegalStateException alreadyRead) {
            vertx.cancelTimer(closer);
            connection.close();
        }
    }
}
