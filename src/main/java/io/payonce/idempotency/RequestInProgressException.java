package io.payonce.idempotency;

/** Thrown when a duplicate's wait for the first execution outlasts its bound. */
public class RequestInProgressException extends RuntimeException {
    public RequestInProgressException() {
        super("first execution still running", null, false, false);
    }
}
