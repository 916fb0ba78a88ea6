package io.payonce.queue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.AMQP;

/**
 * An answer as the contract puts it on a reply queue: the body an HTTP client would get, byte for byte; the
 * HTTP status as the integer header {@code status}; a problem's {@code code}; {@code idempotent-replayed: true}
 * on a replay; {@code final}, true on a final answer; the command's {@code correlation_id}.
 */
final class Answers {

    static final String STATUS = "status";
    static final String CODE = "code";
    static final String REPLAYED = "idempotent-replayed";
    /** True on a final answer, false on a 202 or a retryable refusal: a producer keeps the final one. */
    static final String FINAL = "final";
    private static final ObjectMapper JSON = new ObjectMapper();

    private Answers() {
    }

    /** {@code answer} as a message; {@code messageId} tells it apart from the others of its publish. */
    static Broker.Outgoing message(Outbox.Answer answer, String messageId) {
        Map<String, Object> headers = new HashMap<>();
        headers.put(STATUS, answer.status());
        headers.put(FINAL, answer.isFinal());
        if (answer.code() != null) {
            headers.put(CODE, answer.code());
        }
        if (answer.replayed()) {
            headers.put(REPLAYED, true);
        }
        AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                .contentType(answer.status() < 400 ? "application/json" : "application/problem+json")
                .contentEncoding("utf-8")
                .correlationId(answer.correlationId())
                .messageId(messageId)
                .deliveryMode(2)
                .headers(headers)
                .build();
        return new Broker.Outgoing(answer.replyTo(), properties, answer.body().getBytes(StandardCharsets.UTF_8));
    }

    /** Whether {@code body} is a JSON object with a member {@code name} (false for anything unreadable). */
    static boolean namesMember(byte[] body, String name) {
        try {
            JsonNode tree = JSON.readTree(body);
            return tree != null && tree.isObject() && tree.has(name);
        } catch (IOException | RuntimeException notJson) {
            return false;
        }
    }

    /** A problem body's {@code code}, or null when it has none. */
    static String codeOf(String problem) {
        try {
            JsonNode code = JSON.readTree(problem).get("code");
            return code == null || !code.isTextual() ? null : code.asText();
        } catch (IOException | RuntimeException notJson) {
            return null;
        }
    }
}
