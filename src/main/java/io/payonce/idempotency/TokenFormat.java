package io.payonce.idempotency;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.Arrays;
import java.util.Base64;

/**
 * What issued tokens and client-generated keys look like. An issued token is {@code tok_} and the
 * URL-safe base64 of 128 random bits, its expiry (epoch milliseconds) and a 120-bit MAC over both and
 * the merchant: 56 characters, checkable without a database row. The 39 bytes are a whole number of
 * base64 groups, so exactly one string decodes to them.
 */
public final class TokenFormat {

    private static final String PREFIX = "tok_";
    private static final int RANDOM_BYTES = 16; // the 128 bits of secure randomness the contract asks for
    private static final int EXPIRY_BYTES = Long.BYTES;
    static final int SIGNED_BYTES = RANDOM_BYTES + EXPIRY_BYTES;
    static final int MAC_BYTES = 15;
    /** {@code tok_} and the 52 base64 characters of the 39 bytes. */
    static final int ISSUED_LENGTH = PREFIX.length() + (SIGNED_BYTES + MAC_BYTES) / 3 * 4;
    /** The IETF draft and Stripe: 16 to 255 printable ASCII characters. */
    static final int CLIENT_KEY_MIN = 16;
    static final int CLIENT_KEY_MAX = 255;

    private TokenFormat() {
    }

    /**
     * The part a MAC covers, with the merchant: fresh randomness and the expiry. The generator is the
     * caller's, made when the service starts: one held here would be made while a native image is built
     * and carry that build's seed into every process started from it.
     */
    static byte[] newSignedPart(SecureRandom random, Instant expiresAt) {
        byte[] signed = new byte[SIGNED_BYTES];
        random.nextBytes(signed);
        ByteBuffer.wrap(signed, RANDOM_BYTES, EXPIRY_BYTES).putLong(expiresAt.toEpochMilli());
        return signed;
    }

    static String compose(byte[] signed, byte[] mac) {
        byte[] all = Arrays.copyOf(signed, SIGNED_BYTES + MAC_BYTES);
        System.arraycopy(mac, 0, all, SIGNED_BYTES, MAC_BYTES);
        return PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(all);
    }

    /** The decoded bytes of an issued token (signed part, then MAC), or null when it has not that shape. */
    static byte[] decode(String token) {
        return isIssued(token) ? Base64.getUrlDecoder().decode(token.substring(PREFIX.length())) : null;
    }

    static Instant expiryOf(byte[] decoded) {
        return Instant.ofEpochMilli(ByteBuffer.wrap(decoded, RANDOM_BYTES, EXPIRY_BYTES).getLong());
    }

    public static boolean isIssued(String value) {
        return value.length() == ISSUED_LENGTH && value.startsWith(PREFIX) && base64Url(value, PREFIX.length());
    }

    /**
     * A client key: 16 to 255 printable ASCII characters, the last of which is not a space. MySQL's
     * collations pad with spaces when they compare, so {@code "k "} and {@code "k"} would be one row there
     * and two keys in Redis; refused, a key means the same thing in both.
     */
    public static boolean isClientKey(String value) {
        return value.length() >= CLIENT_KEY_MIN && value.length() <= CLIENT_KEY_MAX && printable(value)
                && value.charAt(value.length() - 1) != ' ';
    }

    /**
     * Whether every character from index {@code from} is in the base64url alphabet {@code [A-Za-z0-9_-]}.
     * Read as Latin-1 bytes, one copy instead of a call per character; a character beyond Latin-1 becomes
     * {@code ?}, outside the alphabet.
     */
    private static boolean base64Url(String value, int from) {
        byte[] latin1 = value.getBytes(StandardCharsets.ISO_8859_1);
        for (int i = from; i < latin1.length; i++) {
            int c = latin1[i] & 0xFF;
            if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-')) {
                return false;
            }
        }
        return true;
    }

    /** Whether every character is printable ASCII, {@code [\x20-\x7E]}. */
    private static boolean printable(String value) {
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c > 0x7E) {
                return false;
            }
        }
        return true;
    }
}
