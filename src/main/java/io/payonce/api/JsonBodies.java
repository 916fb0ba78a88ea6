package io.payonce.api;

import java.io.IOException;
import java.util.Set;
import java.util.stream.Collectors;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.validation.ConstraintViolation;
import jakarta.validation.Validator;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.databind.DatabindException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Reads request bodies: content type, size, strict JSON binding and field rules, each refused with a
 * 400 that names the problem. Bodies are read whole (they are small) and parsed here rather than by the
 * framework, so every refusal has the same problem+json shape.
 */
@ApplicationScoped
public class JsonBodies {

    /** The contract's limit; larger bodies are refused before parsing. */
    static final int MAX_BODY_BYTES = 16 * 1024;

    private final ObjectMapper json;
    private final Validator validator;

    JsonBodies(ObjectMapper json, Validator validator) {
        this.json = json;
        this.validator = validator;
    }

    public <T> T read(HttpHeaders headers, byte[] body, Class<T> type) {
        // read as text: a header the framework cannot parse (an empty one, say) is refused here, not thrown
        return read(headers.getHeaderString(HttpHeaders.CONTENT_TYPE), body, type);
    }

    /** {@link #read(HttpHeaders, byte[], Class)} of a body whose content type is {@code contentType}. */
    public <T> T read(String contentType, byte[] body, Class<T> type) {
        if (!isJson(contentType)) {
            throw new InvalidRequestException("unsupported_media_type", "the body must be application/json");
        }
        if (body == null || body.length == 0) {
            throw new InvalidRequestException("invalid_request", "a JSON body is required");
        }
        if (body.length > MAX_BODY_BYTES) {
            throw new InvalidRequestException("body_too_large", "the body must be at most " + MAX_BODY_BYTES + " bytes");
        }
        T value;
        try {
            value = json.readValue(body, type);
        } catch (JsonParseException e) {
            throw new InvalidRequestException("malformed_json", isDuplicateMember(e)
                    ? "a member name is given more than once" : "the body is not valid JSON");
        } catch (DatabindException e) {
            throw new InvalidRequestException("invalid_request", describe(e));
        } catch (JacksonException e) {
            throw new InvalidRequestException("malformed_json", "the body is not valid JSON");
        } catch (IOException e) {
            throw new InvalidRequestException("malformed_json", "the body could not be read");
        }
        if (value == null) {
            throw new InvalidRequestException("invalid_request", "the body must be a JSON object");
        }
        Set<ConstraintViolation<T>> violations = validator.validate(value);
        if (!violations.isEmpty()) {
            throw new InvalidRequestException("invalid_request", violations.stream()
                    .map(v -> fieldName(v.getPropertyPath().toString()) + " " + v.getMessage())
                    .sorted()
                    .collect(Collectors.joining("; ")));
        }
        return value;
    }

    /** Whether a bound body passes the field rules {@link #read} applies. */
    <T> boolean valid(T value) {
        return validator.validate(value).isEmpty();
    }

    static boolean isJson(String contentType) {
        try {
            return contentType != null && isJson(MediaType.valueOf(contentType));
        } catch (IllegalArgumentException malformed) {
            return false;
        }
    }

    private static boolean isJson(MediaType contentType) {
        return contentType != null && MediaType.APPLICATION_JSON_TYPE.isCompatible(contentType)
                && !contentType.isWildcardType() && !contentType.isWildcardSubtype();
    }

    /** Jackson's strict duplicate detection reports a name given twice as a parse error of its own wording. */
    private static boolean isDuplicateMember(JsonParseException e) {
        return e.getOriginalMessage() != null && e.getOriginalMessage().startsWith("Duplicate field");
    }

    /** Names the field without echoing Java types or the input. */
    private static String describe(DatabindException e) {
        if (e instanceof JsonMappingException mapping && !mapping.getPath().isEmpty()) {
            String field = mapping.getPath().stream()
                    .map(ref -> ref.getFieldName() != null ? ref.getFieldName() : "[" + ref.getIndex() + "]")
                    .collect(Collectors.joining("."));
            return "field " + field + " has the wrong type or an out-of-range value";
        }
        return "the body must be a JSON object of the documented fields";
    }

    /** Record component names are camelCase; the wire names are snake_case. */
    private static String fieldName(String property) {
        return property.replaceAll("([a-z])([A-Z])", "$1_$2").toLowerCase();
    }
}
