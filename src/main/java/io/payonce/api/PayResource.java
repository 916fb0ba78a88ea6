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

import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.ParameterIn;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.headers.Header;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.ExampleObject;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.parameters.RequestBody;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

import io.payonce.PayOnceConfig;
import io.payonce.api.ApiModels.PayRequest;
import io.payonce.api.PayResponses.PaidBody;
import io.payonce.api.PayResponses.ProcessingBody;
import io.payonce.idempotency.IdempotencyKeyMissingException;
import io.payonce.idempotency.InvalidIdempotencyTokenException;
import io.payonce.idempotency.Reply;
import io.payonce.payment.PayCommand;
import io.payonce.payment.PayService;
import io.smallrye.mutiny.Uni;

@Path("/pay")
public class PayResource {

    static final String IDEMPOTENCY_KEY = "Idempotency-Key";
    /** The same name as Vert.x's pre-hashed ASCII name, for the routes that look it up on every request. */
    static final CharSequence IDEMPOTENCY_KEY_NAME = io.vertx.core.http.HttpHeaders.createOptimized(IDEMPOTENCY_KEY);
    static final String REPLAYED = "Idempotent-Replayed";
    /** RFC 7240 {@code Prefer: wait=N}: a client may ask to wait less than the configured bound. */
    private static final Pattern PREFER_WAIT = Pattern.compile("(?:^|[,;\\s])wait\\s*=\\s*(\\d{1,6})");

    private final Merchants merchants;
    private final PayCommands commands;
    private final PayService pay;
    private final Duration waitBound;

    PayResource(Merchants merchants, PayCommands commands, PayService pay, PayOnceConfig config) {
        this.merchants = merchants;
        this.commands = commands;
        this.pay = pay;
        this.waitBound = config.idempotency().waitTimeout();
    }

    /**
     * Pays an order exactly once per token. Its OpenAPI operation also stands for {@link ReplayRoute}, which
     * answers some copies ahead of this method with the same answers.
     */
    @POST
    @Consumes(MediaType.WILDCARD)
    @Produces({ MediaType.APPLICATION_JSON, Problems.MEDIA_TYPE })
    @Tag(name = "Payments")
    @Operation(operationId = "pay", summary = "Pay an order, exactly once per idempotency key", description = """
            The first request with a key executes; every later copy (same merchant, key and parameters) gets \
            its answer, byte for byte, with `Idempotent-Replayed: true`, and a copy that arrives while the first \
            still runs waits for it. Retry with the same key and body after a timeout, a lost connection, \
            `409 request_in_progress` or `503`. A `202` is settled later: read it with \
            `GET /payments/{request_no}`.""")
    @Parameter(name = IDEMPOTENCY_KEY, in = ParameterIn.HEADER, description = """
            The idempotency key: a token from `POST /tokens`, as a structured-field string (`"tok_..."`) or \
            bare. Send the same key with every retry of the request. It may travel in the body field `token` \
            instead; one of the two is required (`400 idempotency_key_missing`).""",
            schema = @Schema(type = SchemaType.STRING, minLength = 1, maxLength = 257), example = "\"tok_AZ3x...\"")
    @Parameter(name = "Prefer", in = ParameterIn.HEADER, description = """
            `wait=N` (RFC 7240): wait at most N seconds, rather than the configured bound, for a first execution \
            still running.""", schema = @Schema(type = SchemaType.STRING), example = "wait=2")
    @RequestBody(required = true, content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = PayRequest.class)))
    @APIResponse(responseCode = "200", description = "Paid. Final: replayed to every copy.",
            headers = @Header(name = REPLAYED, ref = REPLAYED),
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = PaidBody.class),
                    examples = @ExampleObject(name = "paid", ref = "paid")))
    @APIResponse(responseCode = "202", description = """
            The channel's outcome is unknown (a timeout after the charge was sent): the payment stays \
            `PROCESSING` until reconciliation settles it on the channel's word. Read it with \
            `GET /payments/{request_no}`; a copy of this request gets the settled answer once it exists, this \
            `202` until then.""",
            headers = @Header(name = REPLAYED, ref = REPLAYED),
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = ProcessingBody.class),
                    examples = @ExampleObject(name = "processing", ref = "processing")))
    @APIResponse(responseCode = "400", description = """
            The request is malformed, or its key is missing, invalid, or disagrees with the body's. Nothing \
            was executed and the key is not consumed.""",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "invalid_request", ref = "invalid_request"),
                    @ExampleObject(name = "malformed_json", ref = "malformed_json"),
                    @ExampleObject(name = "unsupported_media_type", ref = "unsupported_media_type"),
                    @ExampleObject(name = "idempotency_key_missing", ref = "idempotency_key_missing"),
                    @ExampleObject(name = "invalid_idempotency_token", ref = "invalid_idempotency_token"),
                    @ExampleObject(name = "conflicting_idempotency_key", ref = "conflicting_idempotency_key") }))
    @APIResponse(responseCode = "402", description = """
            Not paid, final: the channel declined the charge (`payment_declined`), or never completed it and it \
            was closed there (`payment_not_completed`). The order can be paid again with a new key and a new \
            `request_no`.""",
            headers = @Header(name = REPLAYED, ref = REPLAYED),
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "payment_declined", ref = "payment_declined"),
                    @ExampleObject(name = "payment_not_completed", ref = "payment_not_completed") }))
    @APIResponse(responseCode = "404", description = "`order_not_found`, final: no such order for this merchant.",
            headers = @Header(name = REPLAYED, ref = REPLAYED),
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "order_not_found", ref = "pay_order_not_found")))
    @APIResponse(responseCode = "409", description = """
            `order_not_payable` (paid, or being paid under another request) is final, and so is \
            `request_no_conflict` (the `request_no` is another key's) once that other request has settled; while \
            it is still in flight the `request_no_conflict` is retryable: it comes with `Retry-After`, is not \
            stored, and the same request sent again pays if that other request is taken back. \
            `request_in_progress`: the first execution outlasted this copy's wait; send it again after \
            `Retry-After`, with the same key.""",
            headers = { @Header(name = REPLAYED, ref = REPLAYED),
                    @Header(name = "Retry-After", description = "with `request_in_progress`, and with a "
                            + "`request_no_conflict` whose other request is still in flight",
                            schema = @Schema(type = SchemaType.INTEGER, format = "int32", minimum = "0")) },
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "order_not_payable", ref = "order_not_payable"),
                    @ExampleObject(name = "request_no_conflict", ref = "request_no_conflict"),
                    @ExampleObject(name = "request_in_progress", ref = "request_in_progress") }))
    @APIResponse(responseCode = "422", description = """
            `amount_mismatch`, final: the amount or currency differs from the order's. \
            `idempotency_key_reused`: the key was first used for a request with other parameters; nothing is \
            executed and nothing stored is revealed.""",
            headers = @Header(name = REPLAYED, ref = REPLAYED),
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "amount_mismatch", ref = "amount_mismatch"),
                    @ExampleObject(name = "idempotency_key_reused", ref = "idempotency_key_reused") }))
    @APIResponse(responseCode = "503", description = """
            `temporarily_unavailable`: the database or the channel could not be reached before anything \
            irreversible happened; nothing was charged and the key is released. Send the same request again \
            after `Retry-After`, with the same key.""",
            headers = @Header(name = "Retry-After", ref = "Retry-After"),
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "temporarily_unavailable", ref = "temporarily_unavailable")))
    public Uni<Response> pay(@Context HttpHeaders headers, @Context RoutingContext route, byte[] body) {
        PayCommand command = commands.read(merchants.require(headers), headers.getHeaderString(IDEMPOTENCY_KEY),
                headers.getHeaderString(HttpHeaders.CONTENT_TYPE), body);
        boolean cacheMissed = Boolean.TRUE.equals(route.get(ReplayRoute.CACHE_MISSED));
        return pay.pay(command, waitBound(headers, waitBound), cacheMissed).map(PayResource::answer);
    }

    /**
     * An answer as HTTP: its status and body, marked when it is a replay; a retryable one says when to retry
     * ({@code Retry-After}).
     */
    static Response answer(Reply reply) {
        Response.ResponseBuilder answer = Response.status(reply.response().status())
                .type(mediaType(reply.response().status()))
                .entity(reply.response().body());
        if (reply.replayed()) {
            answer.header(REPLAYED, "true");
        }
        if (reply.kind() == Reply.Kind.RETRYABLE) {
            answer.header(Problems.RETRY_AFTER, Problems.RETRY_AFTER_SECONDS);
        }
        return answer.build();
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
        // the usual case, no escape and no quote inside: the characters between the quotes as they are
        if (value.indexOf('\\', 1) < 0 && value.indexOf('"', 1) == value.length() - 1) {
            return value.substring(1, value.length() - 1);
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

    /** The configured bound, or the shorter one a client asked for with {@code Prefer: wait=N}. */
    static Duration waitBound(HttpHeaders headers, Duration waitBound) {
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
