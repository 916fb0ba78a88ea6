package io.payonce.idempotency;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * SHA-256 over a canonical form of the request's business parameters. The form is built from the
 * parsed values, so JSON key order and whitespace cannot change it. Identifiers cannot contain a
 * newline (their format forbids it), so newline-separated fields cannot be confused with each other.
 */
public final class Fingerprint {

    private static final String VERSION = "payonce-fp-v1";

    private Fingerprint() {
    }

    /** {@code currency} may be null (not given in the request): it is then the empty field. */
    public static String of(String merchantId, String orderNo, String requestNo, long amount, String currency) {
        String canonical = String.join("\n", VERSION, merchantId, orderNo, requestNo, Long.toString(amount),
                currency == null ? "" : currency);
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(canonical.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}
