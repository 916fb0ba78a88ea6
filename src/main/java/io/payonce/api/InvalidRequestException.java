package io.payonce.api;

/** Thrown when a request is malformed or breaks a field rule; nothing was executed or consumed. */
public class InvalidRequestException extends RuntimeException {

    private final String code;

    public InvalidRequestException(String code, String detail) {
        super(detail, null, false, false);
        this.code = code;
    }

    public String code() {
        return code;
    }
}
