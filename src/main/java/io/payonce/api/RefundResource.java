package io.payonce.api;

import java.time.Duration;

import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

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
import io.payonce.api.ApiModels.RefundRequest;
import io.payonce.api.ApiModels.RefundView;
import io.payonce.api.PayResponses.RefundProcessingBody;
import io.payonce.api.PayResponses.RefundedBody;
import io.payonce.refund.RefundCommand;
import io.payonce.refund.RefundNotFoundException;
import io.payonce.refund.RefundService;
import io.smallrye.mutiny.Uni;

/** Refunds: through the same gate as payments, answered the same way. */
@Path("/refunds")
@Tag(name = "Refunds")
public class RefundResource {

    private final Merchants merchants;
    private final PayCommands commands;
    private final RefundService refunds;
    private final Duration waitBound;

    RefundResource(Merchants merchants, PayCommands commands, RefundService refunds, PayOnceConfig config) {
        this.merchants = merchants;
        this.commands = commands;
        this.refunds = refunds;
        this.waitBound = config.idempotency().waitTimeout();
    }

    @POST
    @Consumes(MediaType.WILDCARD)
    @Produces({ MediaType.APPLICATION_JSON, Problems.MEDIA_TYPE })
    @Operation(operationId = "refund", summary = "Refund part or all of a paid order, exactly once per idempotency key",
            description = """
            The first request with a key executes; every later copy (same merchant, key and parameters) gets \
            its answer, byte for byte, with `Idempotent-Replayed: true`, and a copy that arrives while the first \
            still runs waits for it. Partial refunds add up, never beyond what was paid. Retry with the same key \
            and body after a timeout, a lost connection, `409 request_in_progress` or `503`. A `202` is settled \
            later: read it with `GET /refunds/{refund_no}`.""")
    @Parameter(name = PayResource.IDEMPOTENCY_KEY, in = ParameterIn.HEADER, required = true, description = """
            The idempotency key: a token from `POST /tokens`, as a structured-field string (`"tok_..."`) or \
            bare. Send the same key with every retry of the refund (`400 idempotency_key_missing` without one).""",
            schema = @Schema(type = SchemaType.STRING, minLength = 1, maxLength = 257), example = "\"tok_AZ3x...\"")
    @Parameter(name = "Prefer", in = ParameterIn.HEADER, description = """
            `wait=N` (RFC 7240): wait at most N seconds, rather than the configured bound, for a first execution \
            still running.""", schema = @Schema(type = SchemaType.STRING), example = "wait=2")
    @RequestBody(required = true, content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = RefundRequest.class)))
    @APIResponse(responseCode = "200", description = "Refunded. Final: replayed to every copy.",
            headers = @Header(name = PayResource.REPLAYED, ref = PayResource.REPLAYED),
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = RefundedBody.class),
                    examples = @ExampleObject(name = "refunded", ref = "refunded")))
    @APIResponse(responseCode = "202", description = """
            The channel's outcome is unknown (a timeout after the refund was sent): the refund stays \
            `PROCESSING`, its amount reserved, until reconciliation settles it on the channel's word. Read it \
            with `GET /refunds/{refund_no}`; a copy of this request gets the settled answer once it exists, this \
            `202` until then.""",
            headers = @Header(name = PayResource.REPLAYED, ref = PayResource.REPLAYED),
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = RefundProcessingBody.class),
                    examples = @ExampleObject(name = "refund_processing", ref = "refund_processing")))
    @APIResponse(responseCode = "400", description = """
            The request is malformed, or its key is missing or invalid. Nothing was executed and the key is not \
            consumed.""",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "invalid_request", ref = "invalid_request"),
                    @ExampleObject(name = "malformed_json", ref = "malformed_json"),
                    @ExampleObject(name = "unsupported_media_type", ref = "unsupported_media_type"),
                    @ExampleObject(name = "idempotency_key_missing", ref = "idempotency_key_missing"),
                    @ExampleObject(name = "invalid_idempotency_token", ref = "invalid_idempotency_token") }))
    @APIResponse(responseCode = "402", description = """
            Not refunded, final: the channel declined the refund (`refund_declined`), or never completed it and \
            it was closed there (`refund_not_completed`). Its amount may be refunded with a new key and a new \
            `refund_no`.""",
            headers = @Header(name = PayResource.REPLAYED, ref = PayResource.REPLAYED),
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "refund_declined", ref = "refund_declined"),
                    @ExampleObject(name = "refund_not_completed", ref = "refund_not_completed") }))
    @APIResponse(responseCode = "404", description = "`order_not_found`, final: no such order for this merchant.",
            headers = @Header(name = PayResource.REPLAYED, ref = PayResource.REPLAYED),
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "order_not_found", ref = "refund_order_not_found")))
    @APIResponse(responseCode = "409", description = """
            `order_not_refundable` (not paid, or refunded in full) is final, and so is `refund_no_conflict` (the \
            `refund_no` is another key's) once that other request has settled; while it is still in flight the \
            `refund_no_conflict` is retryable: it comes with `Retry-After`, is not stored, and the same request \
            sent again refunds if that other request is taken back. `request_in_progress`: the first execution \
            outlasted this copy's wait; send it again after `Retry-After`, with the same key.""",
            headers = { @Header(name = PayResource.REPLAYED, ref = PayResource.REPLAYED),
                    @Header(name = "Retry-After", description = "with `request_in_progress`, and with a "
                            + "`refund_no_conflict` whose other request is still in flight",
                            schema = @Schema(type = SchemaType.INTEGER, format = "int32", minimum = "0")) },
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "order_not_refundable", ref = "order_not_refundable"),
                    @ExampleObject(name = "refund_no_conflict", ref = "refund_no_conflict"),
                    @ExampleObject(name = "request_in_progress", ref = "request_in_progress") }))
    @APIResponse(responseCode = "422", description = """
            `refund_exceeds_payment`, final: this refund, with the order's refunds that succeeded or are in \
            flight, would give back more than was paid (only the amount decides: refunds that fit are never \
            refused for racing). `idempotency_key_reused`: the key was first used for a request with other \
            parameters; nothing is executed and nothing stored is revealed.""",
            headers = @Header(name = PayResource.REPLAYED, ref = PayResource.REPLAYED),
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "refund_exceeds_payment", ref = "refund_exceeds_payment"),
                    @ExampleObject(name = "idempotency_key_reused", ref = "idempotency_key_reused") }))
    @APIResponse(responseCode = "503", description = """
            `temporarily_unavailable`: the database or the channel could not be reached before anything \
            irreversible happened; nothing was refunded and the key is released. Send the same request again \
            after `Retry-After`, with the same key.""",
            headers = @Header(name = "Retry-After", ref = "Retry-After"),
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "temporarily_unavailable", ref = "refund_temporarily_unavailable")))
    public Uni<Response> refund(@Context HttpHeaders headers, byte[] body) {
        RefundCommand command = commands.readRefund(merchants.require(headers),
                headers.getHeaderString(PayResource.IDEMPOTENCY_KEY), headers.getHeaderString(HttpHeaders.CONTENT_TYPE),
                body);
        return refunds.refund(command, PayResource.waitBound(headers, waitBound)).map(PayResource::answer);
    }

    @GET
    @Path("/{refund_no}")
    @Produces(MediaType.APPLICATION_JSON)
    @Operation(operationId = "getRefund", summary = "Read a refund",
            description = "How a `202` of `POST /refunds` is followed: `PROCESSING` until the channel's word settles it.")
    @APIResponse(responseCode = "200", description = "The refund.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = RefundView.class)))
    @APIResponse(responseCode = "400", ref = "InvalidIdentifier")
    @APIResponse(responseCode = "404", description = "`refund_not_found`: no such refund for this merchant.",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "refund_not_found", ref = "get_refund_not_found")))
    public Uni<RefundView> get(@Context HttpHeaders headers,
            @Parameter(schema = @Schema(type = SchemaType.STRING, pattern = Identifiers.REGEX), example = "rfd_1")
            @PathParam("refund_no") String refundNo) {
        String merchantId = merchants.require(headers);
        Identifiers.require("refund_no", refundNo);
        return refunds.refund(merchantId, refundNo)
                .map(refund -> RefundView.of(refund.orElseThrow(() -> new RefundNotFoundException(refundNo))));
    }
}
