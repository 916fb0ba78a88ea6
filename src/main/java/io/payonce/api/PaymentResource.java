package io.payonce.api;

import jakarta.ws.rs.GET;
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
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

import io.payonce.api.ApiModels.PaymentView;
import io.payonce.payment.PaymentNotFoundException;
import io.payonce.payment.PayService;
import io.smallrye.mutiny.Uni;

@Path("/payments")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "Payments")
public class PaymentResource {

    private final Merchants merchants;
    private final PayService payments;

    PaymentResource(Merchants merchants, PayService payments) {
        this.merchants = merchants;
        this.payments = payments;
    }

    @GET
    @Path("/{request_no}")
    @Operation(operationId = "getPayment", summary = "Read a payment attempt",
            description = "How a `202` of `POST /pay` is followed: `PROCESSING` until the channel's word settles it.")
    @APIResponse(responseCode = "200", description = "The payment attempt.",
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = PaymentView.class)))
    @APIResponse(responseCode = "400", ref = "InvalidIdentifier")
    @APIResponse(responseCode = "404", description = "`payment_not_found`: no such payment attempt for this merchant.",
            content = @Content(mediaType = Problems.MEDIA_TYPE, schema = @Schema(ref = "Problem"),
                    examples = @ExampleObject(name = "payment_not_found", ref = "payment_not_found")))
    public Uni<PaymentView> get(@Context HttpHeaders headers,
            @Parameter(schema = @Schema(type = SchemaType.STRING, pattern = Identifiers.REGEX), example = "req_1")
            @PathParam("request_no") String requestNo) {
        String merchantId = merchants.require(headers);
        Identifiers.require("request_no", requestNo);
        return payments.payment(merchantId, requestNo)
                .map(payment -> PaymentView.of(payment.orElseThrow(() -> new PaymentNotFoundException(requestNo))));
    }
}
