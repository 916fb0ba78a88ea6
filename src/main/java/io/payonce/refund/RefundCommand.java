package io.payonce.refund;

import io.payonce.idempotency.Fingerprint;

/**
 * One request to refund part or all of a paid order, already validated: {@code refundNo} is the merchant's
 * unique number for it, which the channel receives; every entrance carries an idempotency key ({@code token}).
 */
public record RefundCommand(String merchantId, String token, String orderNo, String refundNo, long amount) {

    public String fingerprint() {
        return Fingerprint.ofRefund(merchantId, orderNo, refundNo, amount);
    }
}
