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
    /** A refund's form starts apart from a payment's, so no refund can ever share a payment's fingerprint. */
    private static final String REFUND_VERSION = "payonce-refund-fp-v1";
    /** A body's digest starts apart from every fingerprint's form. */
    private static final byte[] BODY_DOMAIN = "payonce-pay-body-v1\n".getBytes(StandardCharsets.US_ASCII);
    private static final HexFormat HEX = HexFormat.of();

    private Fingerprint() {
    }

    /** {@code currency} may be null (not given in the request): it is then the empty field. */
    public static String of(String merchantId, String orderNo, String requestNo, long amount, String currency) {
        return digest(VERSION, merchantId, orderNo, requestNo, Long.toString(amount), currency == null ? "" : currency);
    }

    /** A refund's: merchant, order, refund number and amount. */
    public static String ofRefund(String merchantId, String orderNo, String refundNo, long amount) {
        return digest(REFUND_VERSION, merchantId, orderNo, refundNo, Long.toString(amount));
    }

    /**
     * The digest of a pay request's body bytes as received: a copy sent byte for byte again is known for the
     * same request without parsing it (the same merchant and key, the same bytes, bind to the same command).
     * Any other byte, whitespace or member order included, only means the copy is parsed and compared by
     * {@link #of}.
     */
    public static String ofBody(byte[] body) {
        MessageDigest sha = sha256();
        sha.update(BODY_DOMAIN);
        return HEX.formatHex(sha.digest(body));
    }

    private static String digest(String... fields) {
        String canonical = String.join("\n", fields);
        return HEX.formatHex(sha256().digest(canonical.getBytes(StandardCharsets.UTF_8)));
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}
