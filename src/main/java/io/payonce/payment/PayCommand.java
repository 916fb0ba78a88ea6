package io.payonce.payment;

import io.payonce.idempotency.Fingerprint;

/**
 * One request to pay an order, already validated. {@code currency} is null when the request did not
 * name one (the order's is then used). Every entrance carries an idempotency key ({@code token}).
 */
public record PayCommand(String merchantId, String token, String orderNo, String requestNo, long amount,
        String currency) {

    public String fingerprint() {
        return Fingerprint.of(merchantId, orderNo, requestNo, amount, currency);
    }
}
