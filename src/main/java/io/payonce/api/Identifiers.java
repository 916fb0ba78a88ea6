package io.payonce.api;

import io.payonce.Ascii;

/** The identifier format of merchant ids, order numbers and request numbers. */
public final class Identifiers {

    static final int MAX_LENGTH = 64;
    /** The format as a regular expression, for Bean Validation and messages; {@link #valid} checks it without one. */
    public static final String REGEX = "[A-Za-z0-9_-]{1," + MAX_LENGTH + "}";

    private Identifiers() {
    }

    public static boolean valid(String value) {
        return value != null && !value.isEmpty() && value.length() <= MAX_LENGTH && Ascii.isUrlSafe(value, 0);
    }

    /** The value, or a 400 naming the field when it breaks the format. */
    public static String require(String field, String value) {
        if (!valid(value)) {
            throw new InvalidRequestException("invalid_request", field + " must match " + REGEX);
        }
        return value;
    }
}
