package io.payonce.idempotency;

/** An answer as it was first given: status and the exact body bytes (as UTF-8 text). */
public record StoredResponse(int status, String body) {
}
