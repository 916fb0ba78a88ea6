package io.payonce.payment;

/** Why a payment is FAILED: only the channel's word makes it so. */
public enum PaymentFailure {
    /** The channel declined the charge. */
    DECLINED,
    /** The number was closed at the channel before any charge of it succeeded: nothing was charged. */
    CLOSED
}
