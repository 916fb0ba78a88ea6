package io.payonce.sandbox;

import java.util.LinkedHashMap;
import java.util.Map;

import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Positive;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.headers.Header;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.ExampleObject;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.parameters.RequestBody;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.security.SecurityRequirement;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

import io.payonce.api.Identifiers;
import io.payonce.api.InvalidRequestException;
import io.payonce.api.JsonBodies;
import io.payonce.api.Merchants;
import io.payonce.api.Problems;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.smallrye.mutiny.Uni;

/**
 * The built-in test channel's HTTP side, like a provider's test mode: charge and refund ({@link SandboxChannel}),
 * each with its query and close, the ledger per order and, per merchant and operation, a control to make its next
 * charges or refunds slow, declined, refused or answered too late. Both operations run the same code below; only
 * their annotations and their request, pending and closed bodies differ.
 */
@Path("/sandbox")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "Sandbox")
// called at an instance, never through the gateway: the merchant header, not the gateway's API key
@SecurityRequirement(name = "merchant")
public class SandboxResource {

    private final Merchants merchants;
    private final JsonBodies bodies;
    private final Problems problems;
    private final SandboxLedger ledger;
    private final SandboxChannel channel;
    private final SandboxBehavior behavior;

    SandboxResource(Merchants merchants, JsonBodies bodies, Problems problems, SandboxLedger ledger,
            SandboxChannel channel, SandboxBehavior behavior) {
        this.merchants = merchants;
        this.bodies = bodies;
        this.problems = problems;
        this.ledger = ledger;
        this.channel = channel;
        this.behavior = behavior;
    }

    @RegisterForReflection
    @Schema(name = "SandboxChargeRequest")
    public record ChargeRequest(
            @Schema(description = "must be the merchant of the header")
            @NotNull @Pattern(regexp = Identifiers.REGEX) String merchantId,
            @NotNull @Pattern(regexp = Identifiers.REGEX) String orderNo,
            @NotNull @Pattern(regexp = Identifiers.REGEX) String requestNo,
            @NotNull @Positive Long amount,
            @NotNull @Pattern(regexp = "[A-Z]{3}") String currency) implements CallRequest {
        @Override
        public SandboxChannel.Call call() {
            return new SandboxChannel.Call(SandboxOperation.CHARGE, merchantId, orderNo, requestNo, amount, currency);
        }
    }

    @RegisterForReflection
    @Schema(name = "SandboxRefundRequest")
    public record RefundRequest(
            @Schema(description = "must be the merchant of the header")
            @NotNull @Pattern(regexp = Identifiers.REGEX) String merchantId,
            @NotNull @Pattern(regexp = Identifiers.REGEX) String orderNo,
            @NotNull @Pattern(regexp = Identifiers.REGEX) String refundNo,
            @NotNull @Positive Long amount,
            @NotNull @Pattern(regexp = "[A-Z]{3}") String currency) implements CallRequest {
        @Override
        public SandboxChannel.Call call() {
            return new SandboxChannel.Call(SandboxOperation.REFUND, merchantId, orderNo, refundNo, amount, currency);
        }
    }

    /** A charge or refund body: the merchant it names, and the call it asks for. */
    interface CallRequest {
        String merchantId();

        SandboxChannel.Call call();
    }

    /** {@code operation} defaults to {@code charge}, {@code latency_ms} to 0 and {@code count} to 1 when left out. */
    @RegisterForReflection
    @Schema(name = "SandboxBehaviorRequest")
    public record BehaviorRequest(
            @Schema(description = "the calls the behaviour is for: the merchant's next charges, or its next refunds;"
                    + " the other operation's behaviour is left as it is", defaultValue = "charge")
            SandboxOperation operation,
            @Schema(description = "`ok` charges (refunds); `decline` records a declined one; `fail_before_accept`"
                    + " refuses before recording anything (`503 not_accepted`); `timeout_after_accept` records it and"
                    + " answers later than the client's timeout") @NotNull SandboxMode mode,
            @Schema(description = "delay of each call, during which it is PENDING", defaultValue = "0")
            @Min(0) Long latencyMs,
            @Schema(description = "how many of the merchant's next calls of the operation; 0 resets it to `ok` at"
                    + " once", defaultValue = "1") @Min(0) Integer count) {
        SandboxBehavior.Setting setting() {
            return new SandboxBehavior.Setting(operation == null ? SandboxOperation.CHARGE : operation, mode,
                    latencyMs == null ? 0 : latencyMs, count == null ? 1 : count);
        }
    }

    /** The answer to a charge of a number that is still being processed. */
    @RegisterForReflection
    @Schema(name = "SandboxPending")
    public record PendingBody(@Schema(required = true) String requestNo,
            @Schema(required = true, enumeration = "PENDING") String status) {
    }

    /** The answer to a successful close. */
    @RegisterForReflection
    @Schema(name = "SandboxClosed")
    public record ClosedBody(@Schema(required = true) String requestNo,
            @Schema(required = true, enumeration = "CLOSED") String status) {
    }

    /** The answer to a refund of a number that is still being processed. */
    @RegisterForReflection
    @Schema(name = "SandboxRefundPending")
    public record RefundPendingBody(@Schema(required = true) String refundNo,
            @Schema(required = true, enumeration = "PENDING") String status) {
    }

    /** The answer to a successful close of a refund number. */
    @RegisterForReflection
    @Schema(name = "SandboxRefundClosed")
    public record RefundClosedBody(@Schema(required = true) String refundNo,
            @Schema(required = true, enumeration = "CLOSED") String status) {
    }

    @POST
    @Path("/charges")
    @Consumes(MediaType.WILDCARD)
    @Operation(operationId = "sandboxCharge", summary = "Charge, at most once per request number",
            description = "A second charge of a number answers the first one's record and never charges again.")
    @RequestBody(required = true, content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = ChargeRequest.class)))
    @APIResponse(responseCode = "200", description = "The charge's outcome: `SUCCEEDED` or `DECLINED` (`CLOSED` if the"
            + " number was closed first).",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(ref = "SandboxCharge")))
    @APIResponse(responseCode = "202", description = "A charge of this number is still being processed; it was not run"
            + " again.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = PendingBody.class)))
    @APIResponse(responseCode = "400", description = "The body is malformed, or names another merchant.",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "invalid_request", ref = "invalid_request"),
                    @ExampleObject(name = "malformed_json", ref = "malformed_json"),
                    @ExampleObject(name = "unsupported_media_type", ref = "unsupported_media_type"),
                    @ExampleObject(name = "merchant_mismatch", ref = "merchant_mismatch") }))
    @APIResponse(responseCode = "404", description = "`charge_not_found`: the record vanished while the call waited"
            + " (the ledger emptied by hand).",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "charge_not_found", ref = "charge_not_found")))
    @APIResponse(responseCode = "503", description = "`not_accepted`: refused before anything was recorded"
            + " (`fail_before_accept`); nothing was charged. `temporarily_unavailable`: the database could not be"
            + " reached.",
            headers = @Header(name = "Retry-After", description = "with `temporarily_unavailable` only",
                    schema = @Schema(type = SchemaType.INTEGER, format = "int32", minimum = "0")),
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "not_accepted", ref = "not_accepted"),
                    @ExampleObject(name = "temporarily_unavailable", ref = "temporarily_unavailable") }))
    public Uni<Response> charge(@Context HttpHeaders headers, byte[] body) {
        return call(headers, body, ChargeRequest.class);
    }

    @GET
    @Path("/charges/{request_no}")
    @Operation(operationId = "sandboxQueryCharge", summary = "Query a charge by request number")
    @APIResponse(responseCode = "200", description = "The charge as it stands.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(ref = "SandboxCharge")))
    @APIResponse(responseCode = "400", ref = "InvalidIdentifier")
    @APIResponse(responseCode = "404", description = "`charge_not_found`: no charge of this number arrived, and it"
            + " was not closed.",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "charge_not_found", ref = "charge_not_found")))
    public Uni<Response> query(@Context HttpHeaders headers,
            @Parameter(schema = @Schema(type = SchemaType.STRING, pattern = Identifiers.REGEX), example = "req_1")
            @PathParam("request_no") String requestNo) {
        return query(headers, SandboxOperation.CHARGE, requestNo);
    }

    /**
     * Fences the number off: closed (it was never charged, is still pending, or was declined), after which
     * no charge of it can succeed; or refused because a charge of it succeeded, naming the transaction.
     */
    @POST
    @Path("/charges/{request_no}/close")
    @Consumes(MediaType.WILDCARD)
    @Operation(operationId = "sandboxCloseCharge",
            summary = "Close a request number, so that no charge of it can succeed")
    @APIResponse(responseCode = "200", description = "Closed: it was never charged, is still pending, or was declined.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = ClosedBody.class)))
    @APIResponse(responseCode = "400", ref = "InvalidIdentifier")
    @APIResponse(responseCode = "409",
            description = "`charge_succeeded`: a charge of this number succeeded; `txn_id` names it.",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "charge_succeeded", ref = "charge_succeeded")))
    public Uni<Response> close(@Context HttpHeaders headers,
            @Parameter(schema = @Schema(type = SchemaType.STRING, pattern = Identifiers.REGEX), example = "req_1")
            @PathParam("request_no") String requestNo) {
        return close(headers, SandboxOperation.CHARGE, requestNo);
    }

    @POST
    @Path("/refunds")
    @Consumes(MediaType.WILDCARD)
    @Operation(operationId = "sandboxRefund", summary = "Refund, at most once per refund number",
            description = "A second refund of a number answers the first one's record and never refunds again. The"
                    + " sandbox records what it is sent, also more than was charged: the order's ledger shows it.")
    @RequestBody(required = true, content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = RefundRequest.class)))
    @APIResponse(responseCode = "200", description = "The refund's outcome: `SUCCEEDED` or `DECLINED` (`CLOSED` if the"
            + " number was closed first).",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(ref = "SandboxRefund")))
    @APIResponse(responseCode = "202", description = "A refund of this number is still being processed; it was not run"
            + " again.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = RefundPendingBody.class)))
    @APIResponse(responseCode = "400", description = "The body is malformed, or names another merchant.",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "invalid_request", ref = "invalid_request"),
                    @ExampleObject(name = "malformed_json", ref = "malformed_json"),
                    @ExampleObject(name = "unsupported_media_type", ref = "unsupported_media_type"),
                    @ExampleObject(name = "merchant_mismatch", ref = "merchant_mismatch") }))
    @APIResponse(responseCode = "404", description = "`refund_not_found`: the record vanished while the call waited"
            + " (the ledger emptied by hand).",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "refund_not_found", ref = "refund_not_found")))
    @APIResponse(responseCode = "503", description = "`not_accepted`: refused before anything was recorded"
            + " (`fail_before_accept`); nothing was refunded. `temporarily_unavailable`: the database could not be"
            + " reached.",
            headers = @Header(name = "Retry-After", description = "with `temporarily_unavailable` only",
                    schema = @Schema(type = SchemaType.INTEGER, format = "int32", minimum = "0")),
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"), examples = {
                    @ExampleObject(name = "not_accepted", ref = "not_accepted"),
                    @ExampleObject(name = "temporarily_unavailable", ref = "temporarily_unavailable") }))
    public Uni<Response> refund(@Context HttpHeaders headers, byte[] body) {
        return call(headers, body, RefundRequest.class);
    }

    @GET
    @Path("/refunds/{refund_no}")
    @Operation(operationId = "sandboxQueryRefund", summary = "Query a refund by refund number")
    @APIResponse(responseCode = "200", description = "The refund as it stands.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(ref = "SandboxRefund")))
    @APIResponse(responseCode = "400", ref = "InvalidIdentifier")
    @APIResponse(responseCode = "404", description = "`refund_not_found`: no refund of this number arrived, and it"
            + " was not closed.",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "refund_not_found", ref = "refund_not_found")))
    public Uni<Response> queryRefund(@Context HttpHeaders headers,
            @Parameter(schema = @Schema(type = SchemaType.STRING, pattern = Identifiers.REGEX), example = "rfd_1")
            @PathParam("refund_no") String refundNo) {
        return query(headers, SandboxOperation.REFUND, refundNo);
    }

    /**
     * Fences the refund number off: closed (it was never refunded, is still pending, or was declined), after which
     * no refund of it can succeed; or refused because a refund of it succeeded, naming the refund.
     */
    @POST
    @Path("/refunds/{refund_no}/close")
    @Consumes(MediaType.WILDCARD)
    @Operation(operationId = "sandboxCloseRefund",
            summary = "Close a refund number, so that no refund of it can succeed")
    @APIResponse(responseCode = "200", description = "Closed: it was never refunded, is still pending, or was declined.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = RefundClosedBody.class)))
    @APIResponse(responseCode = "400", ref = "InvalidIdentifier")
    @APIResponse(responseCode = "409",
            description = "`refund_succeeded`: a refund of this number succeeded; `refund_id` names it.",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "refund_succeeded", ref = "refund_succeeded")))
    public Uni<Response> closeRefund(@Context HttpHeaders headers,
            @Parameter(schema = @Schema(type = SchemaType.STRING, pattern = Identifiers.REGEX), example = "rfd_1")
            @PathParam("refund_no") String refundNo) {
        return close(headers, SandboxOperation.REFUND, refundNo);
    }

    @GET
    @Path("/charges")
    @Operation(operationId = "sandboxLedger",
            summary = "The ledger of an order: successful charges and refunds, and the calls of each")
    @APIResponse(responseCode = "200", description = "The order's ledger (zeros for an order never charged or"
            + " refunded).",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(ref = "SandboxLedger")))
    @APIResponse(responseCode = "400", ref = "InvalidIdentifier")
    public Uni<SandboxLedger.OrderLedger> ledger(@Context HttpHeaders headers,
            @Parameter(required = true, schema = @Schema(type = SchemaType.STRING, pattern = Identifiers.REGEX),
                    example = "ord_1") @QueryParam("order_no") String orderNo) {
        String merchantId = merchants.require(headers);
        Identifiers.require("order_no", orderNo);
        return ledger.ledger(merchantId, orderNo);
    }

    @PUT
    @Path("/behavior")
    @Consumes(MediaType.WILDCARD)
    @Operation(operationId = "sandboxSetBehavior",
            summary = "Replace the calling merchant's behaviour for its next charges, or its next refunds")
    @RequestBody(required = true, content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = BehaviorRequest.class)))
    @APIResponse(responseCode = "200", description = "The behaviour now in force.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(ref = "SandboxBehavior")))
    @APIResponse(responseCode = "400", ref = "InvalidBody")
    public SandboxBehavior.Setting setBehavior(@Context HttpHeaders headers, byte[] body) {
        String merchantId = merchants.require(headers);
        BehaviorRequest request = bodies.read(headers, body, BehaviorRequest.class);
        return behavior.replace(merchantId, request.setting());
    }

    @GET
    @Path("/behavior")
    @Operation(operationId = "sandboxGetBehavior", summary = "The calling merchant's behaviour now in force")
    @APIResponse(responseCode = "200", description = "The behaviour now in force.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON, schema = @Schema(ref = "SandboxBehavior")))
    @APIResponse(responseCode = "400", description = "`invalid_request`: `operation` is neither `charge` nor"
            + " `refund`.",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "invalid_request", ref = "invalid_request")))
    public SandboxBehavior.Setting getBehavior(@Context HttpHeaders headers,
            @Parameter(description = "the operation whose behaviour to read",
                    schema = @Schema(type = SchemaType.STRING, enumeration = { "charge", "refund" },
                            defaultValue = "charge")) @QueryParam("operation") String operation) {
        String merchantId = merchants.require(headers);
        try {
            return behavior.current(merchantId, operation == null ? SandboxOperation.CHARGE
                    : SandboxOperation.fromWire(operation));
        } catch (IllegalArgumentException e) {
            throw new InvalidRequestException("invalid_request", "operation must be charge or refund");
        }
    }

    private Uni<Response> call(HttpHeaders headers, byte[] body, Class<? extends CallRequest> type) {
        String merchantId = merchants.require(headers);
        CallRequest request = bodies.read(headers, body, type);
        if (!merchantId.equals(request.merchantId())) {
            throw new InvalidRequestException("merchant_mismatch", "merchant_id differs from the merchant header");
        }
        SandboxChannel.Call call = request.call();
        Uni<Response> work = channel.call(call).map(answer -> response(call.operation(), answer));
        // like a real provider, a call under way completes even when the caller hangs up (cancelling
        // the dependent stage leaves this one running)
        return Uni.createFrom().completionStage(work.subscribeAsCompletionStage().thenApply(answer -> answer));
    }

    private Uni<Response> query(HttpHeaders headers, SandboxOperation operation, String number) {
        String merchantId = merchants.require(headers);
        Identifiers.require(operation.numberMember, number);
        return ledger.find(operation, merchantId, number).map(entry -> entry.isPresent()
                ? Response.ok(entry.get()).build()
                : notFound(operation, "no " + operation.wireName() + " " + number));
    }

    private Uni<Response> close(HttpHeaders headers, SandboxOperation operation, String number) {
        String merchantId = merchants.require(headers);
        Identifiers.require(operation.numberMember, number);
        return ledger.close(operation, merchantId, number).map(entry -> {
            if (!entry.isSucceeded()) {
                return Response.ok(switch (operation) {
                    case CHARGE -> new ClosedBody(number, "CLOSED");
                    case REFUND -> new RefundClosedBody(number, "CLOSED");
                }).build();
            }
            Map<String, Object> extra = new LinkedHashMap<>();
            extra.put(operation.numberMember, number);
            extra.put(operation.idMember, entry.id());
            return Response.status(409).type(Problems.MEDIA).entity(problems.body(409, operation.code("succeeded"),
                    operation.title("succeeded"), "the " + operation.wireName() + " " + number
                            + " succeeded and cannot be closed", extra)).build();
        });
    }

    /** A call still being processed is answered "pending", never run again. */
    private Response response(SandboxOperation operation, SandboxChannel.Answer answer) {
        return switch (answer) {
            case SandboxChannel.Answer.Recorded recorded when recorded.entry().isPending() ->
                Response.accepted(switch (operation) {
                    case CHARGE -> new PendingBody(recorded.entry().number(), "PENDING");
                    case REFUND -> new RefundPendingBody(recorded.entry().number(), "PENDING");
                }).build();
            case SandboxChannel.Answer.Recorded recorded -> Response.ok(recorded.entry()).build();
            case SandboxChannel.Answer.NotAccepted notAccepted -> problems.response(503, "not_accepted",
                    "Not accepted", "the sandbox refused the " + operation.wireName() + " before recording anything");
            case SandboxChannel.Answer.Gone gone -> notFound(operation,
                    "the " + operation.wireName() + " is no longer in the ledger");
        };
    }

    private Response notFound(SandboxOperation operation, String detail) {
        return problems.response(404, operation.code("not found"), operation.title("not found"), detail);
    }

}
