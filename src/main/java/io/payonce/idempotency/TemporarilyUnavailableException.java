package io.payonce.idempotency;

/**
 * Thrown when a request could not be executed for a passing reason (database or channel unreachable)
 * before anything irreversible happened, and nothing can happen later under it: the token is released and
 * the same request may be retried. {@link #movement()} is what it would have moved, and so did not.
 */
public class TemporarilyUnavailableException extends RuntimeException {

    /** The money movement a request makes: the one a refused request certainly did not make. */
    public enum Movement {
        CHARGE, REFUND
    }

    private final Movement movement;

    /** A refusal of a charge; a refund's path says so with {@link #ofRefund()}. */
    public TemporarilyUnavailableException(String message, Throwable cause) {
        this(message, cause, Movement.CHARGE);
    }

    private TemporarilyUnavailableException(String message, Throwable cause, Movement movement) {
        super(message, cause, false, false);
        this.movement = movement;
    }

    public Movement movement() {
        return movement;
    }

    /** The same refusal, of a refund: nothing was refunded. */
    public TemporarilyUnavailableException ofRefund() {
        return movement == Movement.REFUND ? this
                : new TemporarilyUnavailableException(getMessage(), getCause(), Movement.REFUND);
    }
}
