package io.payonce;

/**
 * Character-class checks of the request formats read on every request (merchant ids, order and request
 * numbers, tokens), written out instead of regular expressions: the matchers were 5 % of the samples
 * of a replay in a profile. {@code FormatsTest} checks each against the expression it stands for.
 */
public final class Ascii {

    private Ascii() {
    }

    /** Whether every character of {@code value} from index {@code from} is in {@code [A-Za-z0-9_-]}. */
    public static boolean isUrlSafe(String value, int from) {
        for (int i = from; i < value.length(); i++) {
            char c = value.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-')) {
                return false;
            }
        }
        return true;
    }

    /** Whether every character of {@code value} is printable ASCII, {@code [\x20-\x7E]}. */
    public static boolean isPrintable(String value) {
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c > 0x7E) {
                return false;
            }
        }
        return true;
    }
}
