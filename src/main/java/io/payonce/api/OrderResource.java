package io.payonce.api;

import java.util.List;

import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;

import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.ExampleObject;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.parameters.RequestBody;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;
import org.jboss.resteasy.reactive.RestResponse;

import io.payonce.api.ApiModels.CreateOrderRequest;
import io.payonce.api.ApiModels.OrderView;
import io.payonce.order.OrderService;
import io.payonce.payment.PayService;
import io.smallrye.mutiny.Uni;

@Path("/orders")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "Orders")
public class OrderResource {

    private final Merchants merchants;
    private final JsonBodies bodies;
    private final OrderService orders;
    private final PayService payments;

    OrderResource(Merchants merchants, JsonBodies bodies, OrderService orders, PayService payments) {
        this.merchants = merchants;
        this.bodies = bodies;
        this.orders = orders;
        this.payments = payments;
    }

    /** 201 when created; 200 with the same order when it exists with the same terms; 409 otherwise. */
    @POST
    @Consumes(MediaType.WILDCARD)
    @Operation(operationId = "createOrder", summary = "Create an order",
            description = "Idempotent by `order_no`: the same order again is `200` with the same order.")
    @RequestBody(required = true, content = @Content(mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = CreateOrderRequest.class)))
    @APIResponse(responseCode = "201", description = "Created, `PENDING`.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = OrderView.class)))
    @APIResponse(responseCode = "200",
            description = "The order exists with the same terms: it is answered as it is now.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = OrderView.class)))
    @APIResponse(responseCode = "400", ref = "InvalidBody")
    @APIResponse(responseCode = "409",
            description = "`order_conflict`: the order exists with another amount or currency.",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "order_conflict", ref = "order_conflict")))
    public Uni<RestResponse<OrderView>> create(@Context HttpHeaders headers, byte[] body) {
        String merchantId = merchants.require(headers);
        CreateOrderRequest request = bodies.read(headers, body, CreateOrderRequest.class);
        return orders.create(merchantId, request.orderNo(), request.amount(), request.currency())
                .flatMap(result -> result.created()
                        ? Uni.createFrom().item(RestResponse.status(RestResponse.Status.CREATED,
                                OrderView.of(result.order(), List.of())))
                        : payments.attempts(merchantId, request.orderNo())
                                .map(list -> RestResponse.ok(OrderView.of(result.order(), list))));
    }

    @GET
    @Path("/{order_no}")
    @Operation(operationId = "getOrder", summary = "Read an order, its status and its payment attempts")
    @APIResponse(responseCode = "200", description = "The order.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = OrderView.class)))
    @APIResponse(responseCode = "400", ref = "InvalidIdentifier")
    @APIResponse(responseCode = "404", description = "`order_not_found`: no such order for this merchant.",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "order_not_found", ref = "order_not_found")))
    public Uni<OrderView> get(@Context HttpHeaders headers,
            @Parameter(schema = @Schema(type = SchemaType.STRING, pattern = Identifiers.REGEX), example = "ord_1")
            @PathParam("order_no") String orderNo) {
        String merchantId = merchants.require(headers);
        Identifiers.require("order_no", orderNo);
        return orders.get(merchantId, orderNo)
                .flatMap(order -> payments.attempts(merchantId, orderNo).map(list -> OrderView.of(order, list)));
    }
}
