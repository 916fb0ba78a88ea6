package io.payonce.api;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

/**
 * The committed copy of the served OpenAPI document (src/test/openapi/openapi.yaml, kept equal to
 * /q/openapi by {@link OpenApiDocumentTest}), read as a client developer reads it: operations, the statuses
 * each answers and the problem codes each status carries, with {@code $ref}s followed.
 */
final class OpenApiDocument {

    static final Path COMMITTED = Path.of("src/test/openapi/openapi.yaml");
    private static final Set<String> METHODS = Set.of("get", "put", "post", "delete", "patch", "head", "options");

    /** One operation: {@code POST /pay}, its operationId and its node. */
    record Operation(String method, String path, String id, JsonNode node) {

        String name() {
            return method + " " + path;
        }
    }

    private final JsonNode root;

    private OpenApiDocument(JsonNode root) {
        this.root = root;
    }

    static OpenApiDocument committed() {
        try {
            return of(Files.readString(COMMITTED));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static OpenApiDocument of(String yaml) {
        try {
            return new OpenApiDocument(new ObjectMapper(new YAMLFactory()).readTree(yaml));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    JsonNode root() {
        return root;
    }

    List<Operation> operations() {
        List<Operation> operations = new ArrayList<>();
        root.path("paths").fields().forEachRemaining(path -> path.getValue().fields().forEachRemaining(op -> {
            if (METHODS.contains(op.getKey())) {
                operations.add(new Operation(op.getKey().toUpperCase(Locale.ROOT), path.getKey(),
                        op.getValue().path("operationId").asText(null), op.getValue()));
            }
        }));
        return operations;
    }

    Operation operation(String operationId) {
        return operations().stream().filter(op -> operationId.equals(op.id())).findFirst()
                .orElseThrow(() -> new AssertionError("no operation " + operationId + " in the document"));
    }

    /** Every status the operation answers, its response with any {@code $ref} followed. */
    Map<String, JsonNode> responses(Operation op) {
        Map<String, JsonNode> responses = new LinkedHashMap<>();
        op.node().path("responses").fields().forEachRemaining(r -> responses.put(r.getKey(), resolve(r.getValue())));
        return responses;
    }

    /** The statuses the resource declares itself, rather than by naming a shared response of the document. */
    Set<String> ownStatuses(Operation op) {
        Set<String> own = new LinkedHashSet<>();
        op.node().path("responses").fields().forEachRemaining(r -> {
            if (!r.getValue().has("$ref")) {
                own.add(r.getKey());
            }
        });
        return own;
    }

    /** The problem examples of one answer, by name, each with its {@code $ref} followed to the example's value. */
    Map<String, JsonNode> problemExamples(JsonNode response) {
        Map<String, JsonNode> examples = new LinkedHashMap<>();
        response.path("content").path(Problems.MEDIA_TYPE).path("examples").fields()
                .forEachRemaining(e -> examples.put(e.getKey(), resolve(e.getValue()).path("value")));
        return examples;
    }

    /** The problem codes the operation's answer of {@code status} can carry. */
    Set<String> codes(Operation op, String status) {
        JsonNode response = responses(op).get(status);
        Set<String> codes = new LinkedHashSet<>();
        if (response != null) {
            problemExamples(response).values().forEach(example -> codes.add(example.path("code").asText()));
        }
        return codes;
    }

    /** Every problem code the document names in the ProblemCode schema. */
    Set<String> problemCodes() {
        Set<String> codes = new LinkedHashSet<>();
        root.path("components").path("schemas").path("ProblemCode").path("enum").forEach(c -> codes.add(c.asText()));
        return codes;
    }

    /** The header of one answer, by name, or a missing node. */
    JsonNode header(JsonNode response, String name) {
        for (Iterator<Map.Entry<String, JsonNode>> it = response.path("headers").fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> header = it.next();
            if (header.getKey().equalsIgnoreCase(name)) {
                return resolve(header.getValue());
            }
        }
        return response.path("headers").path(name);
    }

    /** The node a {@code $ref} names within this document, or the node itself. */
    JsonNode resolve(JsonNode node) {
        JsonNode at = node;
        while (at.has("$ref")) {
            String ref = at.get("$ref").asText();
            if (!ref.startsWith("#/")) {
                throw new AssertionError("a reference outside the document: " + ref);
            }
            at = root.at(ref.substring(1));
            if (at.isMissingNode()) {
                throw new AssertionError("a reference to nothing: " + ref);
            }
        }
        return at;
    }
}
