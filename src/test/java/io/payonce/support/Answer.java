package io.payonce.support;

import java.util.function.Supplier;

import io.restassured.path.json.JsonPath;
import io.restassured.response.Response;

/**
 * What a pay call got, read whole on the thread that received it so it can be compared on another: an HTTP
 * answer, or ({@code status} 0) the transport error that ended the call, such as the connection reset by a
 * killed process.
 */
public record Answer(int status, String contentType, String body, String replayed, String retryAfter,
        String transportError, long elapsedMs) {

    /** Makes the call and times it; a broken connection is an answer too, never an exception. */
    public static Answer of(Supplier<Response> call) {
        long started = System.nanoTime();
        try {
            Response r = call.get();
            String body = r.asString();
            return new Answer(r.statusCode(), r.contentType(), body, r.header("Idempotent-Replayed"),
                    r.header("Retry-After"), null, elapsedMs(started));
        } catch (Exception e) {
            // REST Assured throws a broken connection's IOException undeclared, so more than RuntimeException
            return new Answer(0, null, null, null, null, e.toString(), elapsedMs(started));
        }
    }

    public boolean answered() {
        return status != 0;
    }

    public boolean isReplay() {
        return "true".equals(replayed);
    }

    /** A problem's {@code code}, or null. */
    public String code() {
        return status >= 400 ? field("code") : null;
    }

    /** A member of the JSON body, or null when there is none (or no JSON body). */
    public String field(String name) {
        return body != null && body.startsWith("{") ? JsonPath.from(body).getString(name) : null;
    }

    /** An answer that tells the client to send the same request again with the same token. */
    public boolean isRetryable() {
        return (status == 503 && "temporarily_unavailable".equals(code()) && retryAfter != null)
                || (status == 409 && "request_in_progress".equals(code()) && retryAfter != null);
    }

    @Override
    public String toString() {
        return answered() ? status + (isReplay() ? " (replayed) " : " ") + body + " after " + elapsedMs + " ms"
                : "no answer (" + transportError + ") after " + elapsedMs + " ms";
    }

    private static long elapsedMs(long startedNanos) {
        return (System.nanoTime() - startedNanos) / 1_000_000;
    }
}
