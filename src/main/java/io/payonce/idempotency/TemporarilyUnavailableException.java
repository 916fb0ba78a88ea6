package io.payonce.idempotency;

/**
 * Thrown when a request could not be executed for a passing reason (database or channel unreachable)
 * before anything irreversible happened, and nothing can happen later under it: the token is released and
 * the same request may be retried.
 */
public class TemporarilyUnavailableException extends RuntimeException {
    public TemporarilyUnavailableException(String message, Throwable cause) {
        super(message, cause, false, false);
    }
}
