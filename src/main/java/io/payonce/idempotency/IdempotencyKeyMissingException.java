package io.payonce.idempotency;

/** Thrown when a pay request carries no token, in neither the header nor the body. */
public class IdempotencyKeyMissingException extends RuntimeException {
    public IdempotencyKeyMissingException() {
        super("no idempotency token was sent", null, false, false);
    }
}
