package io.payonce.api;

import java.util.Map;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import io.payonce.PayOnceConfig;
import io.quarkus.vertx.http.runtime.RouteConstants;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;

/**
 * What one request may cost before anything reads it, on every route: a body must declare its length
 * (411 for one sent in chunks), a length over the contract's 16 KiB is refused from the headers (413,
 * before a byte of the body is read), and a body that does not arrive in full within
 * {@code payonce.http.body-timeout} is answered 408, so that stalled or trickling clients hold neither
 * memory nor a request for long. Each answer is problem+json and closes the connection: the rest of such a
 * body is never read.
 */
@ApplicationScoped
public class RequestLimits {

    private final Problems problems;
    private final Vertx vertx;
    private final long bodyTimeoutMs;

    RequestLimits(Problems problems, Vertx vertx, PayOnceConfig config) {
        this.problems = problems;
        this.vertx = vertx;
        this.bodyTimeoutMs = config.http().bodyTimeout().toMillis();
    }

    void register(@Observes Router router) {
        // ahead of Quarkus' own upload limit, whose refusal is a bare 413
        router.route().order(RouteConstants.ROUTE_ORDER_UPLOAD_LIMIT - 1).handler(this::limit);
    }

    private void limit(RoutingContext ctx) {
        HttpServerRequest request = ctx.request();
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
        HttpServerResponse response = ctx.response();
        response.setStatusCode(status)
                .putHeader(HttpHeaders.CONTENT_TYPE, Problems.MEDIA_TYPE)
                .putHeader(HttpHeaders.CONNECTION, "close")
                .end(problems.body(status, code, title, detail, Map.of()))
                .onComplete(sent -> ctx.request().connection().close());
    }
}
