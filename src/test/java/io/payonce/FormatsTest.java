package io.payonce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Predicate;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import io.payonce.api.Identifiers;
import io.payonce.idempotency.TokenFormat;

/**
 * The hand-written format checks ({@link Identifiers#valid}, {@link TokenFormat}) accept exactly what the regular expressions they
 * replace accept: edge cases, then random strings near each format.
 */
class FormatsTest {

    private static final String URL_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    /** Characters around the edges of the classes: neighbours of each range, controls, DEL, non-ASCII. */
    private static final String NEAR = "@[`{/:\\\u001F\u007F \u00e9\u0130\u212A~!\"+=.\t\n";

    @Test
    void identifiersMatchTheirRegex() {
        Pattern regex = Pattern.compile(Identifiers.REGEX);
        List<String> cases = new ArrayList<>(List.of("", "a", "-", "_", "A-z_09", "a".repeat(64), "a".repeat(65), "a b",
                "ab\u00e9", "x\n", "K\u212A"));
        cases.addAll(random(URL_SAFE, 0, 70, 20_000));
        agree(regex, Identifiers::valid, cases);
    }

    @Test
    void issuedTokensMatchTheirRegex() {
        Pattern regex = Pattern.compile("tok_[A-Za-z0-9_-]{52}");
        List<String> cases = new ArrayList<>(List.of("", "tok_", "tok_" + "a".repeat(52), "tok_" + "a".repeat(51),
                "tok_" + "a".repeat(53), "TOK_" + "a".repeat(52), "tok-" + "a".repeat(52), "xtok_" + "a".repeat(51)));
        for (String s : random(URL_SAFE, 52, 52, 20_000)) {
            cases.add("tok_" + s);
        }
        agree(regex, TokenFormat::isIssued, cases);
    }

    @Test
    void clientKeysMatchTheirRegex() {
        // printable ASCII, not ending in a space (MySQL pads with spaces when it compares)
        Pattern regex = Pattern.compile("[\\x20-\\x7E]{15,254}[\\x21-\\x7E]");
        List<String> cases = new ArrayList<>(List.of("", " ".repeat(16), "~".repeat(255), "a".repeat(15), "a".repeat(256),
                "a".repeat(15) + "\u00e9", "a".repeat(15) + "\u007F", "a".repeat(20) + " "));
        StringBuilder printable = new StringBuilder();
        for (char c = 0x20; c <= 0x7E; c++) {
            printable.append(c);
        }
        cases.addAll(random(printable.toString(), 10, 260, 20_000));
        agree(regex, TokenFormat::isClientKey, cases);
    }

    private static void agree(Pattern regex, Predicate<String> check, List<String> cases) {
        int accepted = 0;
        for (String value : cases) {
            boolean expected = regex.matcher(value).matches();
            assertEquals(expected, check.test(value), () -> "disagrees with " + regex + " on \"" + value + "\"");
            accepted += expected ? 1 : 0;
        }
        // both outcomes are exercised, or the comparison shows nothing
        int acceptedCount = accepted;
        assertTrue(acceptedCount > 0 && acceptedCount < cases.size(), () -> acceptedCount + " of " + cases.size() + " accepted");
    }

    /** Strings of the given lengths, mostly from {@code alphabet}, one character in ten near its edges. */
    private static List<String> random(String alphabet, int minLength, int maxLength, int count) {
        Random random = new Random(42);
        List<String> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int length = minLength + random.nextInt(maxLength - minLength + 1);
            StringBuilder s = new StringBuilder(length);
            for (int j = 0; j < length; j++) {
                String from = random.nextInt(10 * Math.max(1, length / 2)) == 0 ? NEAR : alphabet;
                s.append(from.charAt(random.nextInt(from.length())));
            }
            out.add(s.toString());
        }
        return out;
    }
}
