package io.payonce.api;

import java.util.LinkedHashMap;
import java.util.Map;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

/** RFC 9457 problem details with a stable {@code code}, rendered the same way everywhere. */
@ApplicationScoped
public class Problems {

    public static final String MEDIA_TYPE = "application/problem+json";
    public static final MediaType MEDIA = MediaType.valueOf(MEDIA_TYPE);
    private static final String TYPE_PREFIX = "urn:payonce:problem:";
    public static final String RETRY_AFTER = "Retry-After";
    /** A retryable refusal's wait: a second, enough for a release, a restart or a first execution to move on. */
    public static final String RETRY_AFTER_SECONDS = "1";

    private final ObjectMapper json;

    Problems(ObjectMapper json) {
        this.json = json;
    }

    /** The body of a problem, members in a fixed order so the same problem is the same bytes. */
    public String body(int status, String code, String title, String detail, Map<String, Object> extra) {
        Map<String, Object> problem = new LinkedHashMap<>();
        problem.put("type", TYPE_PREFIX + code);
        problem.put("title", title);
        problem.put("status", status);
        problem.put("detail", detail);
        problem.put("code", code);
        problem.putAll(extra);
        return write(problem);
    }

    public Response response(int status, String code, String title, String detail) {
        return Response.status(status).type(MEDIA).entity(body(status, code, title, detail, Map.of())).build();
    }

    public String write(Object value) {
        try {
            return json.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot render " + value.getClass().getSimpleName(), e);
        }
    }
}
