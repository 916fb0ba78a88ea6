package io.payonce.observability;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.http.Outcome;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.quarkus.runtime.StartupEvent;

/**
 * The HTTP server's request timer ({@code http_server_requests_seconds}) as an operator can rely on it. Its
 * {@code uri} is one of {@link HttpRoutes}' templates or {@value #UNMATCHED}, its {@code method} a standard one
 * or {@value #OTHER}: Quarkus tags a request the REST layer did not match (refused ahead of it, reset, or a
 * path nothing serves) with its raw path, and any method with its name, so without this every made-up method
 * or path were a new series, and once Micrometer's cap of 100 {@code uri} values was reached the routes not
 * yet seen were not measured at all. The mapping runs before any filter's acceptance, so the cap never meets
 * more than the templates and {@value #UNMATCHED}. {@code POST /pay} publishes a latency histogram, and the
 * API's routes exist from the start (zero) so that alerts and panels see them before the first request.
 */
@Singleton
public class HttpServerMeters {

    static final String REQUESTS = "http.server.requests";
    static final String UNMATCHED = "UNMATCHED";
    static final String OTHER = "OTHER";
    private static final String URI = "uri";
    private static final String METHOD = "method";
    private static final String PAY = "/pay";
    /** RFC 9110's methods and PATCH. */
    private static final Set<String> METHODS = Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS",
            "TRACE", "PATCH");

    @Produces
    @Singleton
    MeterFilter boundedRequestTags() {
        return new MeterFilter() {
            @Override
            public Meter.Id map(Meter.Id id) {
                if (!REQUESTS.equals(id.getName())) {
                    return id;
                }
                String uri = id.getTag(URI);
                String method = id.getTag(METHOD);
                boolean knownUri = uri == null || HttpRoutes.TEMPLATES.contains(uri);
                boolean knownMethod = method == null || METHODS.contains(method);
                if (knownUri && knownMethod) {
                    return id;
                }
                List<Tag> tags = new ArrayList<>();
                for (Tag tag : id.getTagsAsIterable()) {
                    tags.add(tag.getKey().equals(URI) && !knownUri ? Tag.of(URI, UNMATCHED)
                            : tag.getKey().equals(METHOD) && !knownMethod ? Tag.of(METHOD, OTHER) : tag);
                }
                return id.replaceTags(tags);
            }

            @Override
            public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
                return REQUESTS.equals(id.getName()) && PAY.equals(id.getTag(URI))
                        ? LatencyHistograms.CONFIG.merge(config)
                        : config;
            }
        };
    }

    /** The API's routes, each with its usual success, as Quarkus' binder names them: zero until requested. */
    void registerRoutes(@Observes StartupEvent start, MeterRegistry meters) {
        for (HttpRoutes.Route route : HttpRoutes.API) {
            Timer.builder(REQUESTS).description("HTTP server request processing time")
                    .tags(METHOD, route.method(), URI, route.template(),
                            "outcome", Outcome.forStatus(route.success()).name(),
                            "status", Integer.toString(route.success()))
                    .register(meters);
        }
    }
}
