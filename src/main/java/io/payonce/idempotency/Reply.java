package io.payonce.idempotency;

/** The answer to one copy of a request; {@code replayed} when it is the first execution's answer. */
public record Reply(StoredResponse response, boolean replayed) {
}
