package io.payonce.sandbox;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
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
 * The built-in test channel, like a provider's test mode: charge (idempotent by request number), query
 * and close, with a ledger per order and, per merchant, a control to make its next charges slow,
 * declined, refused or answered too late.
 */
@Path("/sandbox")
@Produces(MediaType.APPLICATION_JSON)
public class SandboxResource {

    /** The answer to a late charge comes this long after the client gave up. */
    private static final Duration PAST_CLIENT_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration SETTLE_CHECK_EVERY = Duration.ofMillis(10);
    private static final int SETTLE_CHECKS = 50;

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
        // every call is counted: by its charge when it records one, on its own otherwise. With no behaviour
        // set, a charge is recorded at once, so the insert alone tells a fresh number from a repeat; a set
        // behaviour is taken by fresh numbers only.
        Uni<Response> work = behavior.isNormal(merchantId)
                ? fresh(merchantId, request, SandboxBehavior.Setting.NORMAL)
                : ledger.find(merchantId, request.requestNo())
                        .flatMap(existing -> existing != null ? repeat(merchantId, request, existing)
                                : fresh(merchantId, request, behavior.next(merchantId)));
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

    /**
     * A number not seen before takes {@code step}: refused before anything is recorded, or recorded at once
     * with the outcome it will have after the step's latency and answered then, as the record stands (a
     * close in between turned it CLOSED); a late answer comes after the client has given up.
     */
    private Uni<Response> fresh(String merchantId, ChargeRequest request, SandboxBehavior.Setting step) {
        if (step.mode() == SandboxMode.FAIL_BEFORE_ACCEPT) {
            return after(Duration.ofMillis(step.latencyMs()))
                    .flatMap(v -> ledger.countAttempt(merchantId, request.orderNo()))
                    .map(v -> problems.response(503, "not_accepted", "Not accepted",
                            "the sandbox refused the charge before recording anything"));
        }
        String outcome = step.mode() == SandboxMode.DECLINE ? "DECLINED" : "SUCCEEDED";
        Duration answerAfter = Duration.ofMillis(step.latencyMs());
        if (step.mode() == SandboxMode.TIMEOUT_AFTER_ACCEPT) {
            Duration late = config.channel().timeout().plus(PAST_CLIENT_TIMEOUT);
            answerAfter = late.compareTo(answerAfter) > 0 ? late : answerAfter;
        }
        Duration wait = answerAfter;
        String txnId = "sbx_" + UUID.randomUUID().toString().replace("-", "");
        return ledger.record(merchantId, request.requestNo(), request.orderNo(), request.amount(), request.currency(),
                outcome, txnId, step.latencyMs())
                .flatMap(recorded -> recorded
                        ? after(wait).flatMap(v -> settled(merchantId, request.requestNo(), SETTLE_CHECKS)).map(this::answer)
                        // recorded already (a concurrent call with the same number, or a fence): a repeat
                        : ledger.find(merchantId, request.requestNo()).flatMap(existing -> repeat(merchantId, request, existing)));
    }

    /**
     * The record once it has taken effect: its time is on the database's clock, which the wait on this
     * process's clock may be a few milliseconds short of.
     */
    private Uni<SandboxCharge> settled(String merchantId, String requestNo, int checksLeft) {
        return ledger.find(merchantId, requestNo).flatMap(charge -> charge != null && charge.isPending() && checksLeft > 0
                ? after(SETTLE_CHECK_EVERY).flatMap(v -> settled(merchantId, requestNo, checksLeft - 1))
                : Uni.createFrom().item(charge));
    }

    /** A call for a number already recorded: counted, never charged again, answered with the record. */
    private Uni<Response> repeat(String merchantId, ChargeRequest request, SandboxCharge existing) {
        return ledger.countAttempt(merchantId, request.orderNo()).replaceWith(answer(existing));
    }

    /** A charge still being processed is answered "pending", never run again. */
    private Response answer(SandboxCharge charge) {
        if (charge == null) {
            // only when the ledger was emptied by hand while the charge waited (tests clean their tables)
            return problems.response(404, "charge_not_found", "Charge not found", "the charge is no longer in the ledger");
        }
        return charge.isPending()
                ? Response.accepted(new PendingBody(charge.requestNo(), "PENDING")).build()
                : Response.ok(charge).build();
    }

    private static Uni<Void> after(Duration delay) {
        Uni<Void> now = Uni.createFrom().voidItem();
        return delay.isZero() ? now : now.onItem().delayIt().by(delay);
    }

    private String enabledFor(HttpHeaders headers) {
        if (!config.sandbox().enabled()) {
            throw new jakarta.ws.rs.NotFoundException("the sandbox channel is disabled");
        }
        return merchants.require(headers);
    }

}
