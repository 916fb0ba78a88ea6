package io.payonce.support;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.LongString;

/**
 * One answer the queue entrance published to a command's {@code reply_to} (CONTRACT section 9): its
 * {@code correlation_id}, the headers {@code status} (the HTTP status an HTTP client would get),
 * {@code code} (a problem's code, else null) and {@code idempotent-replayed}, and the body an HTTP client
 * would get. {@code headers} holds every header, strings as {@link String} (the client library gives
 * {@link LongString}), {@code final} among them ({@link #finalHeader()}). {@code receivedAtEpochMs}: when the
 * reader received it, on the wall clock (0 when not known).
 *
 * @param status the {@code status} header, or {@link #NO_STATUS} when it is absent or not a number
 */
public record QueueAnswer(String correlationId, int status, String code, boolean replayed, String body,
        Map<String, Object> headers, long receivedAtEpochMs) {

    public static final int NO_STATUS = -1;
    /** The header that marks a final answer (CONTRACT section 9), a boolean. */
    public static final String FINAL = "final";

    /** An answer whose arrival is not known. */
    public QueueAnswer(String correlationId, int status, String code, boolean replayed, String body,
            Map<String, Object> headers) {
        this(correlationId, status, code, replayed, body, headers, 0);
    }

    /** The answer a delivery with {@code properties} and {@code body} makes, received now. */
    public static QueueAnswer of(AMQP.BasicProperties properties, byte[] body) {
        Map<String, Object> headers = readable(properties.getHeaders());
        Object code = headers.get("code");
        return new QueueAnswer(properties.getCorrelationId(), status(headers.get("status")),
                code == null ? null : code.toString(), "true".equals(String.valueOf(headers.get("idempotent-replayed"))),
                new String(body, StandardCharsets.UTF_8), headers, System.currentTimeMillis());
    }

    /** The {@code final} header: true on a final answer, false on a 202 or a retryable refusal, null when absent. */
    public Boolean finalHeader() {
        return headers.get(FINAL) instanceof Boolean marked ? marked : null;
    }

    /** {@code headers} with every {@link LongString}, also inside lists and tables, as a {@link String}. */
    public static Map<String, Object> readable(Map<String, Object> headers) {
        if (headers == null) {
            return Map.of();
        }
        Map<String, Object> out = new LinkedHashMap<>();
        headers.forEach((key, value) -> out.put(key, readableValue(value)));
        return Collections.unmodifiableMap(out);
    }

    @SuppressWarnings("unchecked")
    private static Object readableValue(Object value) {
        if (value instanceof LongString string) {
            return string.toString();
        }
        if (value instanceof Map<?, ?> table) {
            return readable((Map<String, Object>) table);
        }
        if (value instanceof List<?> list) {
            List<Object> out = new ArrayList<>(list.size());
            list.forEach(item -> out.add(readableValue(item)));
            return Collections.unmodifiableList(out);
        }
        return value;
    }

    private static int status(Object header) {
        if (header instanceof Number number) {
            return number.intValue();
        }
        if (header instanceof String text && text.matches("\\d{1,3}")) {
            return Integer.parseInt(text);
        }
        return NO_STATUS;
    }
}
