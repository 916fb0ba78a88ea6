package io.payonce.refund;

/** Thrown when the merchant has no refund under that refund number. */
public class RefundNotFoundException extends RuntimeException {
    public RefundNotFoundException(String refundNo) {
        super("refund " + refundNo + " not found", null, false, false);
    }
}
