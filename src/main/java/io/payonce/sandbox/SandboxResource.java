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

import io.payonce.PayOnceConfig;
import io.payonce.api.Identifiers;
import io.payonce.api.InvalidRequestException;
import io.payonce.api.JsonBodies;
import io.payonce.api.Merchants;
import io.payonce.api.Problems;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.smallrye.mutiny.Uni;

/**
 * The built-in test channel's HTTP side, like a provider's test mode: charge ({@link SandboxChannel}),
 * query and close, the ledger per order and, per merchant, a control to make its next charges slow,
 * declined, refused or answered too late.
 */
@Path("/sandbox")
@Produces(MediaType.APPLICATION_JSON)
public class SandboxResource {

    private final Merchants merchants;
    private final JsonBodies bodies;
    private final Problems problems;
    private final SandboxLedger ledger;
    private final SandboxChannel channel;
    private final SandboxBehavior behavior;
    private final PayOnceConfig config;

    SandboxResource(Merchants merchants, JsonBodies bodies, Problems problems, SandboxLedger ledger,
            SandboxChannel channel, SandboxBehavior behavior, PayOnceConfig config) {
        this.merchants = merchants;
        this.bodies = bodies;
        this.problems = problems;
        this.ledger = ledger;
        this.channel = channel;
        this.behavior = behavior;
        this.config = config;
    }

    @RegisterForReflection
    public record ChargeRequest(
            @NotNull @Pattern(regexp = Identifiers.REGEX) String merchantId,
            @NotNull @Pattern(regexp = Identifiers.REGEX) String orderNo,
            @NotNull @Pattern(regexp = Identifiers.REGEX) String requestNo,
            @NotNull @Positive Long amount,
            @NotNull @Pattern(regexp = "[A-Z]{3}") String currency) {
    }

    /** {@code latency_ms} defaults to 0 and {@code count} to 1 when left out. */
    @RegisterForReflection
    public record BehaviorRequest(@NotNull SandboxMode mode, @Min(0) Long latencyMs, @Min(0) Integer count) {
        SandboxBehavior.Setting setting() {
            return new SandboxBehavior.Setting(mode, latencyMs == null ? 0 : latencyMs, count == null ? 1 : count);
        }
    }

    /** The answer to a charge of a number that is still being processed. */
    @RegisterForReflection
    public record PendingBody(String requestNo, String status) {
    }

    /** The answer to a successful close. */
    @RegisterForReflection
    public record ClosedBody(String requestNo, String status) {
    }

    @POST
    @Path("/charges")
    @Consumes(MediaType.WILDCARD)
    public Uni<Response> charge(@Context HttpHeaders headers, byte[] body) {
        String merchantId = enabledFor(headers);
        ChargeRequest request = bodies.read(headers, body, ChargeRequest.class);
        if (!merchantId.equals(request.merchantId())) {
            throw new InvalidRequestException("merchant_mismatch", "merchant_id differs from the merchant header");
        }
        Uni<Response> work = channel.charge(new SandboxChannel.Charge(merchantId, request.orderNo(),
                request.requestNo(), request.amount(), request.currency())).map(this::response);
        // like a real provider, a charge under way completes even when the caller hangs up (cancelling
        // the dependent stage leaves this one running)
        return Uni.createFrom().completionStage(work.subscribeAsCompletionStage().thenApply(answer -> answer));
    }

    @GET
    @Path("/charges/{request_no}")
    public Uni<Response> query(@Context HttpHeaders headers, @PathParam("request_no") String requestNo) {
        String merchantId = enabledFor(headers);
        Identifiers.require("request_no", requestNo);
        return ledger.find(merchantId, requestNo).map(charge -> charge.isPresent()
                ? Response.ok(charge.get()).build()
                : problems.response(404, "charge_not_found", "Charge not found", "no charge " + requestNo));
    }

    /**
     * Fences the number off: closed (it was never charged, is still pending, or was declined), after which
     * no charge of it can succeed; or refused because a charge of it succeeded, naming the transaction.
     */
    @POST
    @Path("/charges/{request_no}/close")
    @Consumes(MediaType.WILDCARD)
    public Uni<Response> close(@Context HttpHeaders headers, @PathParam("request_no") String requestNo) {
        String merchantId = enabledFor(headers);
        Identifiers.require("request_no", requestNo);
        return ledger.close(merchantId, requestNo).map(charge -> {
            if (!"SUCCEEDED".equals(charge.status())) {
                return Response.ok(new ClosedBody(requestNo, "CLOSED")).build();
            }
            Map<String, Object> extra = new LinkedHashMap<>();
            extra.put("request_no", requestNo);
            extra.put("txn_id", charge.txnId());
            return Response.status(409).type(Problems.MEDIA).entity(problems.body(409, "charge_succeeded",
                    "Charge succeeded", "the charge " + requestNo + " succeeded and cannot be closed", extra)).build();
        });
    }

    @GET
    @Path("/charges")
    public Uni<SandboxLedger.OrderLedger> ledger(@Context HttpHeaders headers, @QueryParam("order_no") String orderNo) {
        String merchantId = enabledFor(headers);
        Identifiers.require("order_no", orderNo);
        return ledger.ledger(merchantId, orderNo);
    }

    @PUT
    @Path("/behavior")
    @Consumes(MediaType.WILDCARD)
    public SandboxBehavior.Setting setBehavior(@Context HttpHeaders headers, byte[] body) {
        String merchantId = enabledFor(headers);
        BehaviorRequest request = bodies.read(headers, body, BehaviorRequest.class);
        return behavior.replace(merchantId, request.setting());
    }

    @GET
    @Path("/behavior")
    public SandboxBehavior.Setting getBehavior(@Context HttpHeaders headers) {
        return behavior.current(enabledFor(headers));
    }

    /** A charge still being processed is answered "pending", never run again. */
    private Response response(SandboxChannel.Answer answer) {
        if (answer instanceof SandboxChannel.Answer.Recorded recorded) {
            SandboxCharge charge = recorded.charge();
            return charge.isPending()
                    ? Response.accepted(new PendingBody(charge.requestNo(), "PENDING")).build()
                    : Response.ok(charge).build();
        }
        if (answer instanceof SandboxChannel.Answer.NotAccepted) {
            return problems.response(503, "not_accepted", "Not accepted",
                    "the sandbox refused the charge before recording anything");
        }
        return problems.response(404, "charge_not_found", "Charge not found", "the charge is no longer in the ledger");
    }

    private String enabledFor(HttpHeaders headers) {
        if (!config.sandbox().enabled()) {
            throw new jakarta.ws.rs.NotFoundException("the sandbox channel is disabled");
        }
        return merchants.require(headers);
    }

}
