package io.payonce.api;

import java.util.regex.Pattern;

/** The identifier format of merchant ids, order numbers and request numbers. */
public final class Identifiers {

    public static final String REGEX = "[A-Za-z0-9_-]{1,64}";
    private static final Pattern PATTERN = Pattern.compile(REGEX);

    private Identifiers() {
    }

    public static boolean valid(String value) {
        return value != null && PATTERN.matcher(value).matches();
    }

    /** The value, or a 400 naming the field when it breaks the format. */
    public static String require(String field, String value) {
        if (!valid(value)) {
            throw new InvalidRequestException("invalid_request", field + " must match " + REGEX);
        }
        return value;
    }
}
