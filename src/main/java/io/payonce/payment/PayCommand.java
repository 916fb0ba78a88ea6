package io.payonce.payment;

import io.payonce.idempotency.Fingerprint;

/**
 * One request to pay an order, already validated. {@code currency} is null when the request did not
 * name one (the order's is then used). Every entrance carries an idempotency key ({@code token}).
 * {@code bodyDigest} is {@link Fingerprint#ofBody} of the body it was read from, null when it was not read
 * from one: cached with the answer, it lets a copy of the same bytes be replayed without being parsed.
 */
public record PayCommand(String merchantId, String token, String orderNo, String requestNo, long amount,
        String currency, String bodyDigest) {

    public String fingerprint() {
        return Fingerprint.of(merchantId, orderNo, requestNo, amount, currency);
    }
}
