package io.payonce.api;

import java.io.IOException;
import java.util.List;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.ws.rs.core.MediaType;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.payonce.PayOnceConfig;
import io.payonce.api.ApiModels.PayRequest;
import io.payonce.payment.PayCommand;
import io.payonce.idempotency.Reply;
import io.payonce.payment.PayService;
import io.quarkus.runtime.configuration.MemorySize;
import io.quarkus.vertx.http.runtime.RouteConstants;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpVersion;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Replays of {@code POST /pay} at Redis speed: ahead of the REST layer, a copy of a finished request
 * whose answer Redis caches is answered from it on the event loop, without the JAX-RS machinery and
 * without MySQL. It answers only when sure: this merchant's valid token in the header, and either the body
 * the first execution was read from, byte for byte (the digest cached with the answer: the same merchant,
 * key and bytes bind to the same command, so nothing is parsed), or a JSON body that binds strictly, passes
 * the REST layer's field rules, carries no token and has a fingerprint equal to the cached one. The
 * fingerprint alone would not do: its canonical form does not tell an empty currency from none, which the
 * REST layer refuses. Anything else (no cached answer, another fingerprint, bad input of any kind, Redis
 * unavailable) goes on to {@link PayResource}, which decides as always.
 */
@ApplicationScoped
public class ReplayRoute {

    /**
     * Set on the request when this route found nothing cached for its token, so the pay path does not look
     * again; an interim answer found there is for the pay path's waiting, so it looks.
     */
    static final String CACHE_MISSED = "payonce.cache-missed";
    private static final String BODY_READ = "payonce.body-read";
    /**
     * Header names and values as Vert.x's ASCII strings, made once: looked up or written on every copy,
     * they are hashed once and checked as bytes rather than character by character.
     */
    private static final CharSequence REPLAYED = HttpHeaders.createOptimized(PayResource.REPLAYED);
    private static final CharSequence TRUE = HttpHeaders.createOptimized("true");
    private static final CharSequence JSON = HttpHeaders.createOptimized(MediaType.APPLICATION_JSON);
    private static final CharSequence PROBLEM = HttpHeaders.createOptimized(Problems.MEDIA_TYPE);

    private final PayService pay;
    private final JsonBodies bodies;
    private final ObjectMapper json;
    private final CharSequence merchantHeader;
    private final long maxBodyBytes;

    ReplayRoute(PayService pay, JsonBodies bodies, ObjectMapper json, PayOnceConfig config,
            @ConfigProperty(name = "quarkus.http.limits.max-body-size") MemorySize maxBody) {
        this.pay = pay;
        this.bodies = bodies;
        this.json = json;
        this.merchantHeader = HttpHeaders.createOptimized(config.merchantHeader());
        this.maxBodyBytes = maxBody.asLongValue();
    }

    void register(@Observes Router router) {
        // a buffer of the declared length (at most the body limit) at once, instead of growing one from 1 KiB
        BodyHandler bodies = BodyHandler.create(false).setBodyLimit(maxBodyBytes).setPreallocateBodyBuffer(true);
        // the REST layer takes a body that a body handler read already (RoutingContext.body()), but waits
        // forever for an empty one: only requests that declare a non-empty body are read here
        router.post("/pay").order(RouteConstants.ROUTE_ORDER_BEFORE_DEFAULT)
                .handler(ctx -> {
                    if (pay.replaysFast() && declaresBody(ctx.request())) {
                        ctx.put(BODY_READ, Boolean.TRUE);
                        bodies.handle(ctx);
                    } else {
                        ctx.next();
                    }
                })
                .handler(this::replay);
    }

    /**
     * A body this route may read ahead of the REST layer: HTTP/1.1 with a declared length. Over HTTP/2 the
     * REST layer reads the stream again after a body handler did, and fails; such a request goes on unread.
     */
    private static boolean declaresBody(HttpServerRequest request) {
        if (request.version() == HttpVersion.HTTP_2) {
            return false;
        }
        String length = request.getHeader(HttpHeaders.CONTENT_LENGTH);
        return length != null && !length.equals("0") && request.getHeader(HttpHeaders.TRANSFER_ENCODING) == null;
    }

    private void replay(RoutingContext ctx) {
        Copy copy = Boolean.TRUE.equals(ctx.get(BODY_READ)) ? copy(ctx) : null;
        if (copy == null) {
            ctx.next();
            return;
        }
        pay.replayCached(copy.merchantId(), copy.key(), copy.body(), () -> command(copy))
                .subscribe().with(cached -> {
                    if (cached.replay().isEmpty()) {
                        if (cached.holdsNothing()) {
                            ctx.put(CACHE_MISSED, Boolean.TRUE);
                        }
                        ctx.next();
                        return;
                    }
                    Reply reply = cached.replay().get();
                    int status = reply.response().status();
                    ctx.response().setStatusCode(status)
                            .putHeader(HttpHeaders.CONTENT_TYPE,
                                    MediaType.APPLICATION_JSON.equals(PayResource.mediaType(status)) ? JSON : PROBLEM)
                            .putHeader(REPLAYED, TRUE)
                            .end(reply.response().body());
                }, refused -> ctx.next());
    }

    /**
     * Whether the REST layer would agree to answer with JSON or problem+json: no Accept, or one that names
     * either or a wildcard over them. Anything less certain (several Accept headers, parameters, q=0) goes
     * on to the REST layer, whose content negotiation then decides, the same with or without a cached answer.
     */
    static boolean acceptsAnswers(List<String> accept) {
        if (accept.isEmpty()) {
            return true;
        }
        if (accept.size() > 1) {
            return false;
        }
        for (String range : accept.get(0).split(",")) {
            String type = range.trim();
            if (type.equals("*/*") || type.equals("application/*") || type.equals(MediaType.APPLICATION_JSON)
                    || type.equals(Problems.MEDIA_TYPE)) {
                return true;
            }
        }
        return false;
    }

    /** A request that may be a copy: its merchant, its key (unquoted) and its body's bytes. */
    private record Copy(String merchantId, String key, byte[] body) {
    }

    /** The request when its headers are a replay's; null sends it on. */
    private Copy copy(RoutingContext ctx) {
        HttpServerRequest request = ctx.request();
        // RequestLimits refused a merchant or key given twice before this route ran
        String merchantId = request.getHeader(merchantHeader);
        String key = request.getHeader(PayResource.IDEMPOTENCY_KEY_NAME);
        Buffer body = ctx.body().buffer();
        if (merchantId == null || !Identifiers.valid(merchantId) || key == null || body == null
                || body.length() > JsonBodies.MAX_BODY_BYTES || !JsonBodies.isJson(request.getHeader(HttpHeaders.CONTENT_TYPE))
                || !acceptsAnswers(request.headers().getAll(HttpHeaders.ACCEPT))) {
            return null;
        }
        try {
            return new Copy(merchantId, PayResource.token(key, null), body.getBytes());
        } catch (RuntimeException notAKey) {
            return null;
        }
    }

    /**
     * The copy as a command when its body is well-formed enough to be a replay; null sends it on. Read only when
     * its bytes are not those of the first execution, whose answer is cached with their digest.
     */
    private PayCommand command(Copy copy) {
        try {
            PayRequest bound = json.readValue(copy.body(), PayRequest.class);
            // the REST layer's own field rules: a body it refuses is never answered here
            if (bound == null || bound.token() != null || !bodies.valid(bound)) {
                return null;
            }
            return new PayCommand(copy.merchantId(), copy.key(), bound.orderNo(), bound.requestNo(), bound.amount(),
                    bound.currency(), null);
        } catch (IOException | RuntimeException notAReplay) {
            return null;
        }
    }
}
