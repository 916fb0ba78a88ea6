package io.payonce.api;

/** The identifier format of merchant ids, order numbers and request numbers. */
public final class Identifiers {

    static final int MAX_LENGTH = 64;
    /** The format as a regular expression, for Bean Validation and messages; {@link #valid} checks it without one. */
    public static final String REGEX = "[A-Za-z0-9_-]{1," + MAX_LENGTH + "}";

    private Identifiers() {
    }

    public static boolean valid(String value) {
        return value != null && !value.isEmpty() && value.length() <= MAX_LENGTH && urlSafe(value);
    }

    /** Every character in {@code [A-Za-z0-9_-]}, checked without a regular expression on every request. */
    private static boolean urlSafe(String value) {
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-')) {
                return false;
            }
        }
        return true;
    }

    /** The value, or a 400 naming the field when it breaks the format. */
    public static String require(String field, String value) {
        if (!valid(value)) {
            throw new InvalidRequestException("invalid_request", field + " must match " + REGEX);
        }
        return value;
    }
}
