package io.payonce.payment;

/** A payment attempt is PROCESSING until the channel's outcome is known; both ends are final. */
public enum PaymentStatus {
    PROCESSING,
    SUCCEEDED,
    FAILED
}
