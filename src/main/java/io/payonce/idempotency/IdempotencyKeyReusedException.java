package io.payonce.idempotency;

/** Thrown when a token bound to one request fingerprint arrives with another. */
public class IdempotencyKeyReusedException extends RuntimeException {
    public IdempotencyKeyReusedException() {
        super("idempotency token bound to another request", null, false, false);
    }
}
