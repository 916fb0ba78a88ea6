package io.payonce.payment;

/**
 * What a movement record moves at the channel: money from the customer (a charge, numbered by the request's
 * {@code request_no}) or back to them (a refund, numbered by its {@code refund_no}). Both go through the same
 * phases, fenced the same way; the channel keeps their numbers apart, and so do the records.
 */
public enum PaymentKind {
    CHARGE,
    REFUND
}
