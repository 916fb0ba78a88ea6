package io.payonce.api;

import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Pattern;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import io.payonce.PayOnceConfig;
import io.payonce.observability.LogContext;
import io.quarkus.vertx.http.runtime.RouteConstants;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;

/**
 * Every request's id, first of all on every route: the gateway's {@code X-Request-Id} when it sent one
 * well-formed value (so the gateway's log and ours name the request alike), else a new one; echoed in the
 * answer's {@code X-Request-Id}, refusals included, and the first key of the request's log context, with the
 * merchant when the header names one.
 */
@ApplicationScoped
public class RequestIds {

    public static final String HEADER = "X-Request-Id";
    /** Wide enough for nginx's {@code $request_id}, UUIDs and trace ids; nothing that could break a log line. */
    private static final Pattern WELL_FORMED = Pattern.compile("[A-Za-z0-9._:+/=-]{1,128}");
    private static final HexFormat HEX = HexFormat.of();

    /** The header names as Vert.x's pre-hashed ASCII names: looked up and written on every request. */
    private static final CharSequence HEADER_NAME = HttpHeaders.createOptimized(HEADER);
    private final CharSequence merchantHeader;

    RequestIds(PayOnceConfig config) {
        this.merchantHeader = HttpHeaders.createOptimized(config.merchantHeader());
    }

    void register(@Observes Router router) {
        // ahead of RequestLimits, so that its refusals carry the id too
        router.route().order(RouteConstants.ROUTE_ORDER_UPLOAD_LIMIT - 2).handler(this::identify);
    }

    private void identify(RoutingContext ctx) {
        List<String> sent = ctx.request().headers().getAll(HEADER_NAME);
        String id = sent.size() == 1 && WELL_FORMED.matcher(sent.get(0)).matches() ? sent.get(0) : newId();
        ctx.response().putHeader(HEADER_NAME, id);
        LogContext.requestId(id);
        List<String> merchant = ctx.request().headers().getAll(merchantHeader);
        if (merchant.size() == 1 && Identifiers.valid(merchant.get(0))) {
            LogContext.merchant(merchant.get(0));
        }
        ctx.next();
    }

    /** 128 random bits in hex, as nginx makes its {@code $request_id}: an id, not a secret. */
    private static String newId() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        return HEX.toHexDigits(random.nextLong()) + HEX.toHexDigits(random.nextLong());
    }
}
