package io.payonce.operations;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The series of a Prometheus text exposition, as {@code /q/metrics} answers it: each name with its label sets and values. */
final class Exposition {

    private static final Pattern LABEL = Pattern.compile("(\\w+)=\"((?:[^\"\\\\]++|\\\\.)*+)\"");

    /** One series: its labels and its value. */
    record Sample(Map<String, String> labels, double value) {
    }

    private final Map<String, List<Sample>> series = new HashMap<>();

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
            double value = value(line.substring(line.lastIndexOf(' ') + 1).trim());
            exposition.series.computeIfAbsent(line.substring(0, labelled ? brace : space), n -> new ArrayList<>())
                    .add(new Sample(labels, value));
        }
        return exposition;
    }

    private static double value(String text) {
        return switch (text) {
            case "+Inf" -> Double.POSITIVE_INFINITY;
            case "-Inf" -> Double.NEGATIVE_INFINITY;
            default -> Double.parseDouble(text);
        };
    }

    boolean has(String metric) {
        return series.containsKey(metric);
    }

    /** Every label some series of the metric carries. */
    Set<String> labels(String metric) {
        Set<String> labels = new TreeSet<>();
        series.getOrDefault(metric, List.of()).forEach(s -> labels.addAll(s.labels().keySet()));
        return labels;
    }

    boolean has(String metric, String label, String value) {
        return series.getOrDefault(metric, List.of()).stream().anyMatch(s -> value.equals(s.labels().get(label)));
    }

    /** The metric's series; none when it is not exported. */
    List<Sample> samples(String metric) {
        return series.getOrDefault(metric, List.of());
    }

    /** The sum of the metric's series that carry all of {@code labels}. */
    double sum(String metric, Map<String, String> labels) {
        return samples(metric).stream().filter(s -> s.labels().entrySet().containsAll(labels.entrySet()))
                .mapToDouble(Sample::value).sum();
    }

    Set<String> metrics() {
        return new TreeSet<>(series.keySet());
    }
}
