package io.payonce.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.restassured.response.Response;

/** What a refusal must be, whether the gateway or an instance made it. */
final class ProblemAnswer {

    private ProblemAnswer() {
    }

    /** A problem+json answer of {@code status} and {@code code} with every member the contract names. */
    static void assertProblem(Response response, int status, String code) {
        String body = response.asString();
        assertEquals(status, response.statusCode(), body);
        assertTrue(String.valueOf(response.contentType()).startsWith("application/problem+json"),
                () -> response.contentType() + ": " + body);
        assertEquals("urn:payonce:problem:" + code, response.path("type"), body);
        assertFalse(((String) response.path("title")).isBlank(), body);
        assertEquals(status, (int) response.path("status"), body);
        assertFalse(((String) response.path("detail")).isBlank(), body);
        assertEquals(code, response.path("code"), body);
    }
}
