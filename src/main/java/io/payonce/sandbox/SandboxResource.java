package io.payonce.sandbox;

import java.time.Duration;
import java.util.UUID;

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
 * The built-in test channel, like a provider's test mode: idempotent by request number, with a ledger
 * per order and a control to make the next charges slow, declined, refused or answered too late.
 */
@Path("/sandbox")
@Produces(MediaType.APPLICATION_JSON)
public class SandboxResource {

    /** The answer to a late charge comes this long after the client gave up. */
    private static final Duration PAST_CLIENT_TIMEOUT = Duration.ofSeconds(1);

    private final Merchants merchants;
    private final JsonBodies bodies;
    private final Problems problems;
    private final SandboxLedger ledger;
    private final SandboxBehavior behavior;
    private final PayOnceConfig config;

    SandboxResource(Merchants merchants, JsonBodies bodies, Problems problems, SandboxLedger ledger,
            SandboxBehavior behavior, PayOnceConfig config) {
        this.merchants = merchants;
        this.bodies = bodies;
        this.problems = problems;
        this.ledger = ledger;
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

    @POST
    @Path("/charges")
    @Consumes(MediaType.WILDCARD)
    public Uni<Response> charge(@Context HttpHeaders headers, byte[] body) {
        String merchantId = enabledFor(headers);
        ChargeRequest request = bodies.read(headers, body, ChargeRequest.class);
        if (!merchantId.equals(request.merchantId())) {
            throw new InvalidRequestException("merchant_mismatch", "merchant_id differs from the merchant header");
        }
        // every call is counted: by its charge when it records one, on its own otherwise. With no behaviour
        // set, a charge is recorded at once, so the insert alone tells a fresh number from a repeat (which
        // record() counts and answers with the first charge); a set behaviour is taken by fresh numbers only.
        Uni<Response> work = behavior.isNormal()
                ? record(merchantId, request, "SUCCEEDED")
                : ledger.find(merchantId, request.requestNo())
                        .flatMap(existing -> existing != null
                                ? ledger.countAttempt(merchantId, request.orderNo()).replaceWith(Response.ok(existing).build())
                                : fresh(merchantId, request, behavior.next()));
        // like a real provider, a charge under way completes even when the caller hangs up (cancelling
        // the dependent stage leaves this one running)
        return Uni.createFrom().completionStage(work.subscribeAsCompletionStage().thenApply(answer -> answer));
    }

    @GET
    @Path("/charges/{request_no}")
    public Uni<Response> query(@Context HttpHeaders headers, @PathParam("request_no") String requestNo) {
        String merchantId = enabledFor(headers);
        Identifiers.require("request_no", requestNo);
        return ledger.find(merchantId, requestNo).map(charge -> charge != null
                ? Response.ok(charge).build()
                : problems.response(404, "charge_not_found", "Charge not found", "no charge " + requestNo));
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
        enabledFor(headers);
        BehaviorRequest request = bodies.read(headers, body, BehaviorRequest.class);
        return behavior.replace(request.setting());
    }

    @GET
    @Path("/behavior")
    public SandboxBehavior.Setting getBehavior(@Context HttpHeaders headers) {
        enabledFor(headers);
        return behavior.current();
    }

    private Uni<Response> fresh(String merchantId, ChargeRequest request, SandboxBehavior.Setting step) {
        Uni<Void> latency = after(Duration.ofMillis(step.latencyMs()));
        return switch (step.mode()) {
            case OK -> latency.flatMap(v -> record(merchantId, request, "SUCCEEDED"));
            case DECLINE -> latency.flatMap(v -> record(merchantId, request, "DECLINED"));
            case FAIL_BEFORE_ACCEPT -> latency.flatMap(v -> ledger.countAttempt(merchantId, request.orderNo()))
                    .map(v -> problems.response(503, "not_accepted", "Not accepted",
                            "the sandbox refused the charge before recording anything"));
            case TIMEOUT_AFTER_ACCEPT -> record(merchantId, request, "SUCCEEDED").flatMap(answer -> {
                Duration late = config.channel().timeout().plus(PAST_CLIENT_TIMEOUT);
                Duration wait = late.toMillis() > step.latencyMs() ? late : Duration.ofMillis(step.latencyMs());
                return after(wait).replaceWith(answer);
            });
        };
    }

    private static Uni<Void> after(Duration delay) {
        Uni<Void> now = Uni.createFrom().voidItem();
        return delay.isZero() ? now : now.onItem().delayIt().by(delay);
    }

    /** Records the charge once; a concurrent call with the same number gets the first record. */
    private Uni<Response> record(String merchantId, ChargeRequest request, String status) {
        SandboxCharge charge = new SandboxCharge("sbx_" + UUID.randomUUID().toString().replace("-", ""),
                request.requestNo(), request.orderNo(), request.amount(), request.currency(), status);
        return ledger.record(merchantId, charge).map(recorded -> Response.ok(recorded).build());
    }

    private String enabledFor(HttpHeaders headers) {
        if (!config.sandbox().enabled()) {
            throw new jakarta.ws.rs.NotFoundException("the sandbox channel is disabled");
        }
        return merchants.require(headers);
    }

}
