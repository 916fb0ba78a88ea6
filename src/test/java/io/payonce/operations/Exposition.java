package io.payonce.operations;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The series of a Prometheus text exposition, as {@code /q/metrics} answers it: each name with its label sets. */
final class Exposition {

    private static final Pattern LABEL = Pattern.compile("(\\w+)=\"((?:[^\"\\\\]++|\\\\.)*+)\"");

    private final Map<String, List<Map<String, String>>> series = new HashMap<>();

    private Exposition() {
    }

    static Exposition parse(String text) {
        Exposition exposition = new Exposition();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int brace = line.indexOf('{');
            int space = line.indexOf(' ');
            boolean labelled = brace >= 0 && brace < space;
            Map<String, String> labels = new HashMap<>();
            if (labelled) {
                Matcher m = LABEL.matcher(line.substring(brace, line.lastIndexOf('}')));
                while (m.find()) {
                    labels.put(m.group(1), m.group(2));
                }
            }
            exposition.series.computeIfAbsent(line.substring(0, labelled ? brace : space), n -> new ArrayList<>())
                    .add(labels);
        }
        return exposition;
    }

    boolean has(String metric) {
        return series.containsKey(metric);
    }

    /** Every label some series of the metric carries. */
    Set<String> labels(String metric) {
        Set<String> labels = new TreeSet<>();
        series.getOrDefault(metric, List.of()).forEach(s -> labels.addAll(s.keySet()));
        return labels;
    }

    boolean has(String metric, String label, String value) {
        return series.getOrDefault(metric, List.of()).stream().anyMatch(s -> value.equals(s.get(label)));
    }

    Set<String> metrics() {
        return new TreeSet<>(series.keySet());
    }
}
