package io.payonce.api;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

import io.vertx.ext.web.RoutingContext;

import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.parameters.RequestBody;

import io.payonce.PayOnceConfig;
import io.payonce.api.ApiModels.PayRequest;
import io.payonce.idempotency.IdempotencyKeyMissingException;
import io.payonce.idempotency.InvalidIdempotencyTokenException;
import io.payonce.payment.PayCommand;
import io.payonce.payment.PayService;
import io.smallrye.mutiny.Uni;

@Path("/pay")
public class PayResource {

    static final String IDEMPOTENCY_KEY = "Idempotency-Key";
    static final String REPLAYED = "Idempotent-Replayed";
    /** RFC 7240 {@code Prefer: wait=N}: a client may ask to wait less than the configured bound. */
    private static final Pattern PREFER_WAIT = Pattern.compile("(?:^|[,;\\s])wait\\s*=\\s*(\\d{1,6})");

    private final Merchants merchants;
    private final JsonBodies bodies;
    private final PayService pay;
    private final Duration waitBound;

    PayResource(Merchants merchants, JsonBodies bodies, PayService pay, PayOnceConfig config) {
        this.merchants = merchants;
        this.bodies = bodies;
        this.pay = pay;
        this.waitBound = config.idempotency().waitTimeout();
    }

    /** Pays an order exactly once per token; the README's Endpoints table lists every answer. */
    @POST
    @Consumes(MediaType.WILDCARD)
    @Produces({ MediaType.APPLICATION_JSON, Problems.MEDIA_TYPE })
    @RequestBody(content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = PayRequest.class)))
    @Parameter(name = IDEMPOTENCY_KEY, description = "the token, as a structured-field string (\"tok_...\") or bare")
    public Uni<Response> pay(@Context HttpHeaders headers, @Context RoutingContext route, byte[] body) {
        String merchantId = merchants.require(headers);
        PayRequest request = bodies.read(headers, body, PayRequest.class);
        String token = token(headers.getHeaderString(IDEMPOTENCY_KEY), request.token());
        PayCommand command = new PayCommand(merchantId, token, request.orderNo(), request.requestNo(),
                request.amount(), request.currency());
        boolean cacheMissed = Boolean.TRUE.equals(route.get(ReplayRoute.CACHE_MISSED));
        return pay.pay(command, waitBound(headers), cacheMissed).map(reply -> {
            Response.ResponseBuilder answer = Response.status(reply.response().status())
                    .type(mediaType(reply.response().status()))
                    .entity(reply.response().body());
            if (reply.replayed()) {
                answer.header(REPLAYED, "true");
            }
            return answer.build();
        });
    }

    /** Answers are JSON, refusals problem+json; a stored answer is replayed with the same type. */
    static String mediaType(int status) {
        return status < 400 ? MediaType.APPLICATION_JSON : Problems.MEDIA_TYPE;
    }

    /** The header's token (a structured-field string, or bare) or the body's; both must agree. */
    static String token(String header, String bodyToken) {
        String fromHeader = header == null || header.isBlank() ? null : unquote(header.trim());
        if (fromHeader != null && bodyToken != null && !fromHeader.equals(bodyToken)) {
            throw new InvalidRequestException("conflicting_idempotency_key",
                    "the Idempotency-Key header and the body field token differ");
        }
        String token = fromHeader != null ? fromHeader : bodyToken;
        if (token == null || token.isEmpty()) {
            throw new IdempotencyKeyMissingException();
        }
        return token;
    }

    /**
     * RFC 8941 sf-string: "..." whose only escapes are \" and \\. Any other backslash makes it no string
     * at all, refused, rather than read as a token it merely resembles.
     */
    private static String unquote(String value) {
        if (value.length() < 2 || value.charAt(0) != '"' || value.charAt(value.length() - 1) != '"') {
            return value;
        }
        StringBuilder out = new StringBuilder(value.length());
        for (int i = 1; i < value.length() - 1; i++) {
            char c = value.charAt(i);
            if (c == '\\') {
                char escaped = i + 1 < value.length() - 1 ? value.charAt(++i) : 0;
                if (escaped != '"' && escaped != '\\') {
                    throw new InvalidIdempotencyTokenException();
                }
                c = escaped;
            } else if (c == '"') {
                throw new InvalidIdempotencyTokenException();
            }
            out.append(c);
        }
        return out.toString();
    }

    private Duration waitBound(HttpHeaders headers) {
        String prefer = headers.getHeaderString("Prefer");
        if (prefer != null) {
            Matcher m = PREFER_WAIT.matcher(prefer);
            if (m.find()) {
                Duration asked = Duration.ofSeconds(Long.parseLong(m.group(1)));
                return asked.compareTo(waitBound) < 0 ? asked : waitBound;
            }
        }
        return waitBound;
    }
}
