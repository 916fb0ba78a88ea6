package io.payonce.payment;

/** Thrown when the merchant has no payment under that request number. */
public class PaymentNotFoundException extends RuntimeException {
    public PaymentNotFoundException(String requestNo) {
        super("payment " + requestNo + " not found", null, false, false);
    }
}
