package io.payonce.channel;

import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

import io.smallrye.mutiny.Uni;

/**
 * The payment channel's HTTP API as the service calls it (the sandbox serves the same shape): charges and
 * refunds, each with its call, its query and its close by the merchant's number.
 */
@Path("/")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
public interface ChannelApi {

    /** The header the channel reads the merchant from; renamed to the configured one on the way out. */
    String MERCHANT_HEADER = "X-Merchant-Id";

    @POST
    @Path("/charges")
    Uni<Response> charge(@HeaderParam(MERCHANT_HEADER) String merchantId, ChargeRequest request);

    @GET
    @Path("/charges/{request_no}")
    Uni<Response> query(@HeaderParam(MERCHANT_HEADER) String merchantId,
            @PathParam("request_no") String requestNo);

    /** Fences the number off: after a successful close no charge with it can succeed. */
    @POST
    @Path("/charges/{request_no}/close")
    Uni<Response> close(@HeaderParam(MERCHANT_HEADER) String merchantId, @PathParam("request_no") String requestNo);

    @POST
    @Path("/refunds")
    Uni<Response> refund(@HeaderParam(MERCHANT_HEADER) String merchantId, RefundRequest request);

    @GET
    @Path("/refunds/{refund_no}")
    Uni<Response> queryRefund(@HeaderParam(MERCHANT_HEADER) String merchantId,
            @PathParam("refund_no") String refundNo);

    /** Fences the refund number off: after a successful close no refund with it can succeed. */
    @POST
    @Path("/refunds/{refund_no}/close")
    Uni<Response> closeRefund(@HeaderParam(MERCHANT_HEADER) String merchantId, @PathParam("refund_no") String refundNo);

    /** A charge as the service sends it: {@code request_no} is the merchant's unique number. */
    record ChargeRequest(String merchantId, String orderNo, String requestNo, long amount, String currency) {
    }

    /** A refund as the service sends it: {@code refund_no} is the merchant's unique number for it. */
    record RefundRequest(String merchantId, String orderNo, String refundNo, long amount, String currency) {
    }

}
