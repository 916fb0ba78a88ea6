package io.payonce.idempotency;

/** Thrown when the token is unknown, expired or another merchant's: the three are indistinguishable on purpose. */
public class InvalidIdempotencyTokenException extends RuntimeException {
    public InvalidIdempotencyTokenException() {
        super("unknown, expired or foreign idempotency token", null, false, false);
    }
}
