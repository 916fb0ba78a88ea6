package io.payonce.operations;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

/**
 * What the alerting rules, their tests and the dashboard read of the service: their expressions, and the
 * check that an instance's exposition has every metric they name with the labels they use.
 */
final class MonitoredMetrics {

    static final Path PROMETHEUS = Path.of("src/main/prometheus");
    static final Path RULES = PROMETHEUS.resolve("alerts.yml");
    static final Path RULE_TESTS = PROMETHEUS.resolve("alerts-test.yml");
    static final Path DASHBOARD = Path.of("src/main/grafana/payonce.json");
    /** Prometheus adds these to every series it scrapes; no instance exports them. */
    private static final Set<String> TARGET_LABELS = Set.of("job", "instance");
    private static final Pattern LABEL_VALUES = Pattern.compile("label_values\\((.*),\\s*(\\w+)\\s*\\)");
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    static final ObjectMapper JSON = new ObjectMapper();

    private MonitoredMetrics() {
    }

    /**
     * What {@code exported} lacks of what the rules, their tests and the dashboard read, one line a lack: a
     * metric, a label, or (in a rule) a value required with {@code =} that no series carries. Empty when
     * nothing is missing.
     */
    static Set<String> missingFrom(Exposition exported) throws IOException {
        Set<String> problems = new LinkedHashSet<>();
        for (JsonNode alert : alerts()) {
            check(RULES + " " + alert.path("alert").asText(), alert.path("expr").asText(), true, exported, problems);
        }
        for (JsonNode test : YAML.readTree(RULE_TESTS.toFile()).path("tests")) {
            for (JsonNode input : test.path("input_series")) {
                check(RULE_TESTS + " " + test.path("name").asText(), input.path("series").asText(), false, exported,
                        problems);
            }
        }
        dashboardQueries().forEach((where, expr) -> check(where, expr, false, exported, problems));
        for (JsonNode variable : JSON.readTree(DASHBOARD.toFile()).path("templating").path("list")) {
            Matcher values = LABEL_VALUES.matcher(variable.path("definition").asText());
            if (values.matches()) {
                check(DASHBOARD + " variable " + variable.path("name").asText(), values.group(1), false, exported,
                        problems);
            }
        }
        return problems;
    }

    static List<JsonNode> alerts() throws IOException {
        List<JsonNode> alerts = new ArrayList<>();
        for (JsonNode group : YAML.readTree(RULES.toFile()).path("groups")) {
            group.path("rules").forEach(alerts::add);
        }
        return alerts;
    }

    /** Each query of each dashboard panel, by where it is: panel title and query id. */
    static Map<String, String> dashboardQueries() throws IOException {
        Map<String, String> queries = new LinkedHashMap<>();
        for (JsonNode panel : JSON.readTree(DASHBOARD.toFile()).path("panels")) {
            for (JsonNode target : panel.path("targets")) {
                String where = DASHBOARD + " panel \"" + panel.path("title").asText() + "\" "
                        + target.path("refId").asText();
                queries.put(where, target.path("expr").asText());
            }
        }
        return queries;
    }

    /**
     * The metrics {@code expr} names must be exported with the labels it matches or groups by; with
     * {@code exactValues}, each value it requires with {@code =} must be one a series carries.
     */
    private static void check(String where, String expr, boolean exactValues, Exposition exported,
            Set<String> problems) {
        List<PromQl.Selector> selectors = PromQl.selectors(expr);
        if (selectors.isEmpty()) {
            problems.add(where + ": no metric found in " + expr);
        }
        Set<String> labels = new TreeSet<>(TARGET_LABELS);
        for (PromQl.Selector selector : selectors) {
            String metric = selector.metric();
            if (!exported.has(metric)) {
                problems.add(where + ": " + metric + " is not exported");
                continue;
            }
            labels.addAll(exported.labels(metric));
            for (PromQl.LabelMatcher matcher : selector.matchers()) {
                if (TARGET_LABELS.contains(matcher.label())) {
                    continue;
                }
                if (!exported.labels(metric).contains(matcher.label())) {
                    problems.add(where + ": " + metric + " has no label " + matcher.label());
                } else if (exactValues && matcher.op().equals("=")
                        && !exported.has(metric, matcher.label(), matcher.value())) {
                    problems.add(where + ": no series " + metric + "{" + matcher.label() + "=\"" + matcher.value()
                            + "\"}");
                }
            }
        }
        for (String label : PromQl.groupingLabels(expr)) {
            if (!labels.contains(label)) {
                problems.add(where + ": groups by " + label + ", which none of its metrics has");
            }
        }
    }
}
