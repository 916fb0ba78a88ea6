package io.payonce.idempotency;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.regex.Pattern;

/** What issued tokens and client-generated keys look like. */
public final class TokenFormat {

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final int RANDOM_BYTES = 24; // 192 bits, above the 128 the contract asks for
    private static final Pattern ISSUED = Pattern.compile("tok_[A-Za-z0-9_-]{32}");
    /** The IETF draft and Stripe: 16 to 255 printable ASCII characters. */
    private static final Pattern CLIENT_KEY = Pattern.compile("[\\x20-\\x7E]{16,255}");

    private TokenFormat() {
    }

    public static String newToken() {
        byte[] bytes = new byte[RANDOM_BYTES];
        RANDOM.nextBytes(bytes);
        return "tok_" + Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    public static boolean isIssued(String value) {
        return ISSUED.matcher(value).matches();
    }

    public static boolean isClientKey(String value) {
        return CLIENT_KEY.matcher(value).matches();
    }
}
