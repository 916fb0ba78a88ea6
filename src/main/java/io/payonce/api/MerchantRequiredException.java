package io.payonce.api;

/** Thrown when the gateway's merchant header is missing or malformed. */
public class MerchantRequiredException extends RuntimeException {
    public MerchantRequiredException(String detail) {
        super(detail, null, false, false);
    }
}
