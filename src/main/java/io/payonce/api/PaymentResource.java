package io.payonce.api;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;

import io.payonce.api.ApiModels.PaymentView;
import io.payonce.database.Database;
import io.payonce.payment.PaymentNotFoundException;
import io.payonce.payment.PaymentRepository;
import io.smallrye.mutiny.Uni;

@Path("/payments")
@Produces(MediaType.APPLICATION_JSON)
public class PaymentResource {

    private final Merchants merchants;
    private final PaymentRepository payments;
    private final Database db;

    PaymentResource(Merchants merchants, PaymentRepository payments, Database db) {
        this.merchants = merchants;
        this.payments = payments;
        this.db = db;
    }

    @GET
    @Path("/{request_no}")
    public Uni<PaymentView> get(@Context HttpHeaders headers, @PathParam("request_no") String requestNo) {
        String merchantId = merchants.require(headers);
        Identifiers.require("request_no", requestNo);
        return db.bounded(payments.find(merchantId, requestNo))
                .map(payment -> PaymentView.of(payment.orElseThrow(() -> new PaymentNotFoundException(requestNo))));
    }
}
