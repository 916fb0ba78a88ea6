package io.payonce.operations;

import static io.payonce.support.Fixtures.MERCHANT;
import static io.payonce.support.Fixtures.payAnswer;
import static io.payonce.support.Fixtures.payPreferringWait;
import static io.payonce.support.Fixtures.payRequest;
import static io.payonce.support.Fixtures.sandbox;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.payonce.reconcile.ProcessingBacklog;
import io.payonce.reconcile.Reconciler;
import io.payonce.support.Answer;
import io.payonce.support.Await;
import io.payonce.support.Fixtures;
import io.payonce.support.Operations;
import io.payonce.support.PayRequest;
import io.payonce.support.TestDatabase;
import io.quarkus.redis.datasource.RedisDataSource;
import io.quarkus.test.junit.QuarkusTest;

/**
 * The alerting rules and the dashboard against the service they watch: the rules pass promtool's check and
 * their unit tests, each rule has a test in which it fires, a severity, a description and a runbook, and
 * every metric the rules, their tests and the dashboard name is one a running instance exports, with the
 * labels they use, after traffic that touches them all ({@code MetricsIT} checks the same of an instance that has
 * served nothing). promtool comes with Debian's prometheus package ({@code scripts/services.sh --test-tools}).
 */
@QuarkusTest
class AlertRulesTest {

    private static final Path RULES = MonitoredMetrics.RULES;
    private static final Path RULE_TESTS = MonitoredMetrics.RULE_TESTS;
    private static final Set<String> SEVERITIES = Set.of("critical", "warning");
    private static final Duration PROMTOOL_BOUND = Duration.ofSeconds(60);
    private static final Duration RUN = Duration.ofSeconds(20);
    /** Past min-age (30 s), its owner's lease over: a payment reconciliation takes up. */
    private static final Duration OLD_ENOUGH = Duration.ofMinutes(1);
    private static final Duration LEASE_OVER = Duration.ofSeconds(-1);
    private static final ObjectMapper YAML = MonitoredMetrics.YAML;

    @Inject
    TestDatabase db;

    @Inject
    Reconciler reconciler;

    @Inject
    ProcessingBacklog backlog;

    @Inject
    RedisDataSource redis;

    @Test
    void rules_passPromtoolCheck() {
        promtool("check", "rules", RULES.toString());
    }

    @Test
    void rules_passTheirUnitTests() {
        promtool("test", "rules", RULE_TESTS.toString());
    }

    @Test
    void dashboardQueries_areValidPromQl() throws IOException {
        List<Map<String, String>> recorded = new ArrayList<>();
        MonitoredMetrics.dashboardQueries().forEach((where, expr) -> recorded.add(Map.of(
                // named after its panel and query, so that promtool's complaint says which
                "record", "dashboard:" + where.replaceAll(".*panel ", "").replaceAll("\\W+", "_"),
                // Grafana's variables as Grafana fills them in: a range, and a regex for a label value
                "expr", expr.replaceAll("\\$__\\w+", "5m").replaceAll("\\$\\{?\\w+}?", ".*"))));
        Map<String, Object> rules = Map.of("groups", List.of(Map.of("name", "dashboard", "rules", recorded)));
        File file = File.createTempFile("payonce-dashboard", ".yml");
        file.deleteOnExit();
        YAML.writeValue(file, rules);

        promtool("check", "rules", file.getPath());
    }

    @Test
    void everyRule_hasAFiringTestASeverityADescriptionAndARunbook() throws IOException {
        Set<String> fired = new TreeSet<>();
        for (JsonNode test : YAML.readTree(RULE_TESTS.toFile()).path("tests")) {
            for (JsonNode check : test.path("alert_rule_test")) {
                if (!check.path("exp_alerts").isEmpty()) {
                    fired.add(check.path("alertname").asText());
                }
            }
        }
        List<JsonNode> alerts = MonitoredMetrics.alerts();
        assertFalse(alerts.isEmpty(), "no alert in " + RULES);

        List<String> problems = new ArrayList<>();
        for (JsonNode alert : alerts) {
            String name = alert.path("alert").asText();
            if (!fired.contains(name)) {
                problems.add(name + ": no test in " + RULE_TESTS + " in which it fires");
            }
            if (!SEVERITIES.contains(alert.path("labels").path("severity").asText())) {
                problems.add(name + ": severity is not one of " + SEVERITIES);
            }
            for (String annotation : List.of("description", "runbook")) {
                String text = alert.path("annotations").path(annotation).asText();
                if (text.isBlank() || text.contains("\n")) {
                    problems.add(name + ": " + annotation + " is not one line");
                }
            }
        }
        assertTrue(problems.isEmpty(), String.join("\n", problems));
    }

    @Test
    void everyMetricTheRulesTheirTestsAndTheDashboardName_isExportedWithItsLabels() throws Exception {
        trafficTouchingEveryMetric();

        Exposition exported = Exposition.parse(Operations.management().get("/q/metrics").then().statusCode(200).extract().asString());

        Set<String> problems = MonitoredMetrics.missingFrom(exported);
        assertTrue(problems.isEmpty(), String.join("\n", problems) + "\n(exported: " + exported.metrics() + ")");
    }

    /**
     * Requests and runs after which every series the rules and the dashboard use is exported, those
     * registered at their first use included: a replay, a duplicate that gives up waiting and one that is
     * answered, a Redis lookup that fails, a payment reconciled.
     */
    private void trafficTouchingEveryMetric() throws Exception {
        db.clean();
        Fixtures.sandboxNormal();
        PayRequest paid = payRequest();
        payAnswer(paid);
        payAnswer(paid);

        PayRequest slow = payRequest();
        sandbox("ok", 1000, 1);
        CompletableFuture<Answer> owner = CompletableFuture.supplyAsync(() -> payAnswer(slow));
        Await.until("the slow request to claim its token", Duration.ofSeconds(5),
                () -> "IN_PROGRESS".equals(db.tokenState(MERCHANT, slow.token())));
        assertEquals(409, payPreferringWait(slow, 0).status(), "a duplicate that does not wait");
        assertEquals(200, payAnswer(slow).status(), "a duplicate that waits for the answer");
        owner.get(RUN.toSeconds(), TimeUnit.SECONDS);

        // a hash where the token's cached answer belongs: Redis answers the lookup with an error
        PayRequest unlucky = payRequest();
        redis.hash(String.class).hset("po:{" + MERCHANT + ":" + unlucky.token() + "}:res", "not", "an answer");
        assertEquals(200, payAnswer(unlucky).status(), "a payment whose cache lookup failed");

        db.paymentProcessing(OLD_ENOUGH, LEASE_OVER);
        assertEquals(1, reconciler.runOnce().await().atMost(RUN).settled(), "payments reconciled");
        backlog.measure().await().atMost(RUN);
    }

    /** Runs promtool; its exit status must be 0, and what it printed is the failure message otherwise. */
    private static void promtool(String... args) {
        List<String> command = new ArrayList<>(List.of("promtool"));
        command.addAll(List.of(args));
        try {
            File output = File.createTempFile("promtool", ".out");
            output.deleteOnExit();
            Process process;
            try {
                process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output).start();
            } catch (IOException notFound) {
                throw new AssertionError("promtool not found on the PATH: scripts/services.sh --test-tools installs it"
                        + " from Debian's prometheus package", notFound);
            }
            if (!process.waitFor(PROMTOOL_BOUND.toSeconds(), TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError(String.join(" ", command) + " did not end within " + PROMTOOL_BOUND);
            }
            assertEquals(0, process.exitValue(), String.join(" ", command) + ":\n" + Files.readString(output.toPath()));
        } catch (IOException e) {
            throw new AssertionError(String.join(" ", command), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(String.join(" ", command), e);
        }
    }
}
