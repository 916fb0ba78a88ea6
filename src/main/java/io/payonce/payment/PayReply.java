package io.payonce.payment;

import io.payonce.idempotency.StoredResponse;

/** The answer to one copy of a pay request; {@code replayed} when it is the first execution's answer. */
public record PayReply(StoredResponse response, boolean replayed) {
}
