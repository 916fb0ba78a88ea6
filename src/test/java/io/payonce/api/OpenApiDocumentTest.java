package io.payonce.api;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import com.fasterxml.jackson.databind.JsonNode;

import io.payonce.api.OpenApiDocument.Operation;
import io.payonce.support.Operations;
import io.quarkus.test.junit.QuarkusTest;

/**
 * The OpenAPI document as a client developer depends on it: the one the client of {@link GeneratedClientTest}
 * is generated from is the one served, every operation says what it answers and with which problem codes,
 * and the README's Endpoints table says the same.
 */
@QuarkusTest
class OpenApiDocumentTest {

    private static final Path SERVED_COPY = Path.of("target/openapi/served.yaml");
    /**
     * Answered for a path the service does not have (the sandbox's too while it is off), or a method a path does
     * not have: no operation's.
     */
    private static final Set<String> PATH_LEVEL_CODES = Set.of("not_found", "method_not_allowed");
    /** The answers any request can get (api/CommonAnswers); the README says them once, under its table. */
    private static final Set<String> ANY_REQUEST = Set.of("400", "401", "406", "408", "411", "413", "500", "503");
    private static final Pattern README_OPERATION = Pattern.compile("`(GET|POST|PUT|PATCH|DELETE) (/[^`?\\s]*)");
    private static final Pattern STATUS = Pattern.compile("(?<![\\w.])([1-5]\\d\\d)(?![\\w.])");
    private static final Pattern CODE = Pattern.compile("\\b[a-z]+(?:_[a-z]+)+\\b");

    private final OpenApiDocument document = OpenApiDocument.committed();

    @Test
    void servedDocument_isTheCommittedOneTheClientIsGeneratedFrom() throws IOException {
        byte[] served = Operations.management().get("/q/openapi").then().statusCode(200).extract().asByteArray();

        if (!Arrays.equals(Files.readAllBytes(OpenApiDocument.COMMITTED), served)) {
            Files.createDirectories(SERVED_COPY.getParent());
            Files.write(SERVED_COPY, served);
            fail(OpenApiDocument.COMMITTED + " differs from what /q/openapi serves (written to " + SERVED_COPY
                    + "). If the change is meant: cp " + SERVED_COPY + " " + OpenApiDocument.COMMITTED
                    + ", then build again: the test client is generated from that file.");
        }
    }

    /**
     * The business API as clients meet it at the gateway: the API key it takes, and its own answers; the
     * sandbox as a test deployment meets it at an instance: the merchant header.
     */
    @Test
    void everyOperation_isNamedTaggedAndSecured_andAnswersItsSuccessWithASchema() {
        JsonNode apiKey = document.root().at("/components/securitySchemes/api_key");
        JsonNode merchant = document.root().at("/components/securitySchemes/merchant");
        List<Executable> checks = new ArrayList<>(List.of(
                () -> assertEquals("apiKey", apiKey.path("type").asText()),
                () -> assertEquals("header", apiKey.path("in").asText()),
                () -> assertEquals("X-Api-Key", apiKey.path("name").asText()),
                () -> assertEquals("apiKey", merchant.path("type").asText()),
                () -> assertEquals("header", merchant.path("in").asText()),
                () -> assertEquals("X-Merchant-Id", merchant.path("name").asText()),
                () -> assertEquals("[{\"api_key\":[]}]", document.root().path("security").toString(),
                        "every call through the gateway needs the API key")));
        Set<String> ids = new HashSet<>();
        for (Operation op : document.operations()) {
            if (op.path().startsWith("/sandbox/")) {
                checks.add(() -> assertEquals("[{\"merchant\":[]}]", op.node().path("security").toString(),
                        op.name() + ": at an instance, the merchant header"));
                checks.add(() -> assertEquals(Set.of("merchant_required"), document.codes(op, "401"), op.name()));
            } else {
                checks.add(() -> assertTrue(op.node().path("security").isMissingNode(), op.name() + ": the API key"));
                checks.add(() -> assertEquals(Set.of("unauthenticated", "merchant_mismatch"), document.codes(op, "401"),
                        op.name() + ": the gateway's 401"));
                checks.add(() -> assertEquals(Set.of("bad_gateway"), document.codes(op, "502"), op.name()));
                checks.add(() -> assertEquals(Set.of("gateway_timeout"), document.codes(op, "504"), op.name()));
            }
            checks.add(() -> assertTrue(op.id() != null && ids.add(op.id()), op.name() + ": a unique operationId"));
            checks.add(() -> assertEquals(1, op.node().path("tags").size(), op.name() + ": one tag"));
            checks.add(() -> assertFalse(op.node().path("summary").asText().isBlank(), op.name() + ": a summary"));
            Map<String, JsonNode> responses = document.responses(op);
            checks.add(() -> assertTrue(responses.keySet().containsAll(ANY_REQUEST),
                    op.name() + " lists the answers any request can get: " + responses.keySet()));
            responses.forEach((status, response) -> {
                if (status.startsWith("2")) {
                    checks.add(() -> assertTrue(response.at("/content/application~1json/schema").isObject(),
                            op.name() + " " + status + ": a JSON schema"));
                }
            });
            JsonNode body = op.node().path("requestBody");
            if (!body.isMissingNode()) {
                checks.add(() -> assertTrue(body.path("required").asBoolean(), op.name() + ": the body is required"));
                checks.add(() -> assertTrue(body.at("/content/application~1json/schema/$ref").isTextual(),
                        op.name() + ": the body is a named JSON schema, not bytes"));
            }
        }
        assertAll(checks);
    }

    @Test
    void everyRefusal_isAProblem_withAnExampleOfEachCode_carryingItsStatus() {
        Set<String> known = document.problemCodes();
        Set<String> exemplified = new TreeSet<>();
        List<Executable> checks = new ArrayList<>();
        for (Operation op : document.operations()) {
            document.responses(op).forEach((status, response) -> {
                if (status.compareTo("400") < 0) {
                    return;
                }
                String answer = op.name() + " " + status;
                JsonNode schema = response.at("/content/application~1problem+json/schema/$ref");
                checks.add(() -> assertEquals("#/components/schemas/Problem", schema.asText(), answer + ": a Problem"));
                Map<String, JsonNode> examples = document.problemExamples(response);
                checks.add(() -> assertFalse(examples.isEmpty(), answer + ": an example of each code"));
                examples.forEach((name, example) -> {
                    String code = example.path("code").asText();
                    exemplified.add(code);
                    checks.add(() -> assertTrue(known.contains(code), answer + ": " + code + " is a ProblemCode"));
                    checks.add(() -> assertEquals(Integer.parseInt(status), example.path("status").asInt(),
                            answer + " " + name + ": the status of its answer"));
                    checks.add(() -> assertEquals("urn:payonce:problem:" + code, example.path("type").asText(),
                            answer + " " + name));
                    checks.add(() -> assertTrue(example.hasNonNull("title") && example.hasNonNull("detail"),
                            answer + " " + name + ": title and detail"));
                });
            });
        }
        assertAll(checks);
        Set<String> unexemplified = new TreeSet<>(known);
        unexemplified.removeAll(exemplified);
        unexemplified.removeAll(PATH_LEVEL_CODES);
        assertEquals(Set.of(), unexemplified, "ProblemCode values no operation answers with");
    }

    @Test
    void retryAfter_isDocumentedWhereverARetryIsAsked() {
        List<Executable> checks = new ArrayList<>();
        for (Operation op : document.operations()) {
            document.responses(op).forEach((status, response) -> {
                Set<String> codes = document.codes(op, status);
                if (codes.contains("temporarily_unavailable") || codes.contains("request_in_progress")) {
                    checks.add(() -> assertTrue(document.header(response, "Retry-After").has("schema"),
                            op.name() + " " + status + ": Retry-After"));
                }
            });
        }
        Operation pay = document.operation("pay");
        for (String status : List.of("200", "202", "402", "404", "409", "422")) {
            checks.add(() -> assertTrue(document.header(document.responses(pay).get(status), "Idempotent-Replayed")
                    .has("schema"), "POST /pay " + status + ": a replay says so"));
        }
        assertAll(checks);
    }

    @Test
    void readmeEndpointsTable_listsEachOperation_withItsOwnAnswersAndCodes() throws IOException {
        Map<String, String> readme = readmeEndpoints();
        Map<String, Operation> documented = document.operations().stream()
                .collect(Collectors.toMap(Operation::name, Function.identity(), (a, b) -> a, LinkedHashMap::new));

        assertEquals(new TreeSet<>(documented.keySet()), new TreeSet<>(readme.keySet()),
                "the README's Endpoints table and the document name the same operations");
        Set<String> known = document.problemCodes();
        List<Executable> checks = new ArrayList<>();
        documented.forEach((name, op) -> {
            String answers = readme.get(name);
            Set<String> statuses = document.responses(op).keySet();
            Set<String> codes = new LinkedHashSet<>();
            statuses.forEach(status -> codes.addAll(document.codes(op, status)));
            Set<String> ownStatuses = new LinkedHashSet<>(document.ownStatuses(op));
            ownStatuses.remove("400");
            Set<String> ownCodes = new LinkedHashSet<>();
            ownStatuses.forEach(status -> ownCodes.addAll(document.codes(op, status)));
            Set<String> saidStatuses = matches(STATUS, answers);
            Set<String> saidCodes = matches(CODE, answers);
            saidCodes.retainAll(known);
            checks.add(() -> assertTrue(statuses.containsAll(saidStatuses),
                    name + ": the README names " + saidStatuses + ", the document " + statuses));
            checks.add(() -> assertTrue(saidStatuses.containsAll(ownStatuses),
                    name + ": the README names " + saidStatuses + ", not all of " + ownStatuses));
            checks.add(() -> assertTrue(codes.containsAll(saidCodes),
                    name + ": the README names " + saidCodes + ", the document " + codes));
            checks.add(() -> assertTrue(saidCodes.containsAll(ownCodes),
                    name + ": the README names " + saidCodes + ", not all of " + ownCodes));
        });
        assertAll(checks);
    }

    /** Each operation the README's Endpoints table names, with the text of its answers. */
    private static Map<String, String> readmeEndpoints() throws IOException {
        String readme = Files.readString(Path.of("README.md"));
        int start = readme.indexOf("\n## Endpoints\n");
        assertTrue(start >= 0, "the README has an Endpoints section");
        int end = readme.indexOf("\n## ", start + 1);
        Map<String, String> rows = new LinkedHashMap<>();
        for (String line : readme.substring(start, end < 0 ? readme.length() : end).split("\n")) {
            if (!line.startsWith("| `")) {
                continue;
            }
            String[] cells = line.split("(?<!\\\\)\\|");
            Set<String> operations = new LinkedHashSet<>();
            Matcher m = README_OPERATION.matcher(cells[1]);
            while (m.find()) {
                operations.add(m.group(1) + " " + m.group(2));
            }
            assertTrue(operations.size() <= 1, "one operation a row: " + line);
            operations.forEach(op -> assertEquals(null, rows.put(op, cells[2]), "named twice: " + op));
        }
        return rows;
    }

    private static Set<String> matches(Pattern pattern, String text) {
        Set<String> found = new LinkedHashSet<>();
        Matcher m = pattern.matcher(text);
        while (m.find()) {
            found.add(m.groupCount() > 0 ? m.group(1) : m.group());
        }
        return found;
    }
}
