package io.payonce.operations;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The metrics a PromQL expression selects and the labels it groups by, read as far as the expressions
 * of the alert rules and the dashboard need: selectors with label matchers, functions, aggregations
 * with {@code by}, ranges, arithmetic and comparisons. Grafana's variables may stand in ranges and in
 * label values.
 */
final class PromQl {

    record LabelMatcher(String label, String op, String value) {
    }

    record Selector(String metric, List<LabelMatcher> matchers) {
    }

    private static final Pattern GROUPING = Pattern.compile(
            "\\b(?:by|without|on|ignoring|group_left|group_right)\\s*\\(([^)]*)\\)");
    private static final Pattern RANGE = Pattern.compile("\\[[^\\]]*\\]");
    /** A name not inside another word or number, with its braces if it has any. */
    private static final Pattern SELECTOR = Pattern.compile("(?<![\\w:.$])([a-zA-Z_:][\\w:]*)\\s*(\\{[^}]*\\})?");
    private static final Pattern MATCHER = Pattern.compile("(\\w+)\\s*(=~|!~|!=|=)\\s*\"((?:[^\"\\\\]++|\\\\.)*+)\"");
    private static final Set<String> KEYWORDS = Set.of("and", "or", "unless", "bool", "offset", "inf", "nan");

    private PromQl() {
    }

    static List<Selector> selectors(String expr) {
        String bare = RANGE.matcher(GROUPING.matcher(expr).replaceAll(" ")).replaceAll(" ");
        List<Selector> selectors = new ArrayList<>();
        Matcher m = SELECTOR.matcher(bare);
        while (m.find()) {
            String name = m.group(1);
            if (KEYWORDS.contains(name.toLowerCase()) || (m.group(2) == null && calls(bare, m.end()))) {
                continue;
            }
            selectors.add(new Selector(name, m.group(2) == null ? List.of() : matchers(m.group(2))));
        }
        return selectors;
    }

    /** The labels of every {@code by (...)}, {@code on (...)} and the like. */
    static Set<String> groupingLabels(String expr) {
        Set<String> labels = new LinkedHashSet<>();
        Matcher m = GROUPING.matcher(expr);
        while (m.find()) {
            for (String label : m.group(1).split(",")) {
                if (!label.isBlank()) {
                    labels.add(label.strip());
                }
            }
        }
        return labels;
    }

    private static List<LabelMatcher> matchers(String braces) {
        List<LabelMatcher> matchers = new ArrayList<>();
        Matcher m = MATCHER.matcher(braces);
        while (m.find()) {
            matchers.add(new LabelMatcher(m.group(1), m.group(2), m.group(3)));
        }
        return matchers;
    }

    /** Whether the name ending at {@code end} is a function's or an aggregation's: an opening parenthesis follows. */
    private static boolean calls(String expr, int end) {
        int i = end;
        while (i < expr.length() && Character.isWhitespace(expr.charAt(i))) {
            i++;
        }
        return i < expr.length() && expr.charAt(i) == '(';
    }
}
