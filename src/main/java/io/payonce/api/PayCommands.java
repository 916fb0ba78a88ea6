package io.payonce.api;

import jakarta.inject.Singleton;

import io.payonce.api.ApiModels.PayRequest;
import io.payonce.api.ApiModels.RefundRequest;
import io.payonce.idempotency.Fingerprint;
import io.payonce.payment.PayCommand;
import io.payonce.refund.RefundCommand;

/**
 * A pay or refund request read the same way at every entrance (HTTP, the queue): its merchant as the entrance
 * established it, its key from the entrance's key header or the body's {@code token} (both must agree), its
 * body by the contract's field rules. A request one entrance refuses, the other refuses with the same answer.
 */
@Singleton
public class PayCommands {

    private final JsonBodies bodies;

    PayCommands(JsonBodies bodies) {
        this.bodies = bodies;
    }

    /**
     * The command; fails with {@link InvalidRequestException}, {@link io.payonce.idempotency.IdempotencyKeyMissingException}
     * or {@link io.payonce.idempotency.InvalidIdempotencyTokenException}, which {@link ProblemMapper} answers.
     */
    public PayCommand read(String merchantId, String keyHeader, String contentType, byte[] body) {
        PayRequest request = bodies.read(contentType, body, PayRequest.class);
        return new PayCommand(merchantId, PayResource.token(keyHeader, request.token()), request.orderNo(),
                request.requestNo(), request.amount(), request.currency(), Fingerprint.ofBody(body));
    }

    /** A refund command, by the same rules (its key from the entrance's key header only). */
    public RefundCommand readRefund(String merchantId, String keyHeader, String contentType, byte[] body) {
        RefundRequest request = bodies.read(contentType, body, RefundRequest.class);
        return new RefundCommand(merchantId, PayResource.token(keyHeader, null), request.orderNo(),
                request.refundNo(), request.amount());
    }
}
