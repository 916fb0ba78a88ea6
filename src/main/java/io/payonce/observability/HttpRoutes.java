package io.payonce.observability;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Every route the service serves, as the REST layer names it in a metric's {@code uri} tag (its template),
 * with the status of its usual success. HTTP metrics carry only these templates, so nothing a client sends
 * can add a series or crowd a route out; {@code HttpRoutesTest} keeps the list equal to the resources' own
 * {@code @Path}s.
 */
public final class HttpRoutes {

    /** One route: its method, its template and the status it answers when it succeeds. */
    public record Route(String method, String template, int success) {
    }

    /** The business API. */
    public static final List<Route> API = List.of(
            new Route("POST", "/orders", 201),
            new Route("GET", "/orders/{order_no}", 200),
            new Route("POST", "/tokens", 201),
            new Route("POST", "/pay", 200),
            new Route("GET", "/payments/{request_no}", 200),
            new Route("POST", "/refunds", 200),
            new Route("GET", "/refunds/{refund_no}", 200));

    /** The built-in sandbox channel, served when it is turned on. */
    public static final List<Route> SANDBOX = List.of(
            new Route("POST", "/sandbox/charges", 200),
            new Route("GET", "/sandbox/charges", 200),
            new Route("GET", "/sandbox/charges/{request_no}", 200),
            new Route("POST", "/sandbox/charges/{request_no}/close", 200),
            new Route("POST", "/sandbox/refunds", 200),
            new Route("GET", "/sandbox/refunds/{refund_no}", 200),
            new Route("POST", "/sandbox/refunds/{refund_no}/close", 200),
            new Route("PUT", "/sandbox/behavior", 200),
            new Route("GET", "/sandbox/behavior", 200));

    public static final Set<String> TEMPLATES = Stream.concat(API.stream(), SANDBOX.stream()).map(Route::template)
            .collect(Collectors.toUnmodifiableSet());

    private HttpRoutes() {
    }
}
