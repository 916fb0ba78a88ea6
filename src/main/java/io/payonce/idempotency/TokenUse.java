package io.payonce.idempotency;

import java.time.Instant;

/**
 * One copy's use of a checked token: the fingerprint it binds, and when the token expires (what is
 * cached of it must not outlive that). {@code firstUse} says how to claim it: insert its row (the
 * common case), or take an existing released row back.
 */
public record TokenUse(String token, String fingerprint, String requestNo, Instant expiresAt, boolean firstUse) {

    /** The same use, claiming the row that turned out to exist. */
    public TokenUse again() {
        return new TokenUse(token, fingerprint, requestNo, expiresAt, false);
    }
}
