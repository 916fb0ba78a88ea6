package io.payonce.operations;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.payonce.observability.HttpRoutes;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.PayRequest;
import io.restassured.http.ContentType;
import io.restassured.specification.RequestSpecification;

/**
 * /q/metrics of the packaged application as an operator's Prometheus scrapes it: complete from the first
 * scrape, bounded whatever clients send, and named the same at every start.
 */
class MetricsIT {

    private static final String MERCHANT = "merchant_metrics";
    private static final String REQUESTS = "http_server_requests_seconds_count";
    private static final Set<String> STANDARD_METHODS = Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT",
            "OPTIONS", "TRACE", "PATCH");
    /**
     * The flood's series are (method or OTHER) x UNMATCHED x the few statuses its refusals get; with the routes'
     * own, well under this, where a made-up method or path each made a series of their own.
     */
    private static final int SERIES_BOUND = 60;
    /** The standard methods the flood sends too: not HEAD, whose answer has no body, nor CONNECT, a tunnel's. */
    private static final List<String> SENT_METHODS = List.of("GET", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH");
    private static final int FLOOD = 2_000;
    private static final long SEED = 32;
    private static final Duration COUNTED = Duration.ofSeconds(5);
    private static final Pattern UUID_SHAPE = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

    /** Serves no request at all: its first scrape, as soon as it is ready, is {@link #firstScrape}. */
    private static AppProcess fresh;
    private static Exposition firstScrape;
    /** Gets {@value #FLOOD} requests no route serves first, then serves every other test, in any order. */
    private static AppProcess used;

    @BeforeAll
    static void start() throws Exception {
        fresh = AppProcess.named("metrics-fresh");
        used = AppProcess.named("metrics-used");
        AppProcess.startAll(fresh, used);
        firstScrape = scrape(fresh);
        // before any test's request, so that the routes a test measures are seen only after it
        Random random = new Random(SEED);
        for (int i = 0; i < FLOOD; i++) {
            exchange(used.port(), madeUpRequest(random));
        }
    }

    @AfterAll
    static void stop() throws InterruptedException {
        AppProcess.closeAll(fresh, used);
    }

    @Test
    void aFreshInstance_exportsEveryMetricTheRulesAndTheDashboardName() throws Exception {
        Set<String> missing = MonitoredMetrics.missingFrom(firstScrape);

        assertTrue(missing.isEmpty(), "before any traffic:\n" + String.join("\n", missing)
                + "\n(exported: " + firstScrape.metrics() + ")");
    }

    @Test
    void afterMadeUpMethodsAndPaths_theHttpSeriesAreBounded() {
        List<Exposition.Sample> series = scrape(used).samples(REQUESTS);
        List<String> unbounded = new ArrayList<>();
        for (Exposition.Sample sample : series) {
            String uri = sample.labels().get("uri");
            String method = sample.labels().get("method");
            if (!HttpRoutes.TEMPLATES.contains(uri) && !"UNMATCHED".equals(uri)
                    || !STANDARD_METHODS.contains(method) && !"OTHER".equals(method)) {
                unbounded.add(sample.labels().toString());
            }
        }
        assertTrue(unbounded.isEmpty() && series.size() <= SERIES_BOUND, series.size() + " series of " + REQUESTS
                + " after " + FLOOD + " made-up requests (at most " + SERIES_BOUND + "); tags of no route or method: "
                + unbounded.subList(0, Math.min(10, unbounded.size())));
    }

    @Test
    void afterMadeUpMethodsAndPaths_theRoutesAreStillMeasured() {
        assertCounted(used, "POST", "/tokens", () -> on(used).post("/tokens").then().statusCode(201));
        assertCounted(used, "GET", "/payments/{request_no}",
                () -> on(used).get("/payments/req_never_made").then().statusCode(404));
        // a replay from Redis is answered by api/ReplayRoute, a Vert.x route ahead of the REST layer
        PayRequest paid = paidRequest();
        assertCounted(used, "POST", "/pay",
                () -> paid.on(on(used)).post("/pay").then().statusCode(200).header("Idempotent-Replayed", "true"));
    }

    @Test
    void redisPools_areNamedTheSameAtEveryStart() {
        // a payment and its replay: both go through the fast path's Redis pools
        PayRequest paid = paidRequest();
        paid.on(on(used)).post("/pay").then().statusCode(200).header("Idempotent-Replayed", "true");

        Exposition exported = scrape(used);

        List<String> unstable = new ArrayList<>();
        for (String metric : exported.metrics()) {
            if (metric.startsWith("m_")) {
                unstable.add(metric + " (no prefix)");
            }
            for (Exposition.Sample sample : exported.samples(metric)) {
                sample.labels().forEach((label, value) -> {
                    if (UUID_SHAPE.matcher(value).find()) {
                        unstable.add(metric + " " + label + "=" + value);
                    }
                });
            }
        }
        assertTrue(unstable.isEmpty(), "named anew at each start: " + new TreeSet<>(unstable));
        assertTrue(exported.has("redis_pool_active", "pool_name", "fast-path-0@127.0.0.1:6379"),
                "the fast path's pools: " + exported.samples("redis_pool_active"));
    }

    /** A request paid on {@link #used}, its answer cached in Redis. */
    private static PayRequest paidRequest() {
        String orderNo = "ord_" + UUID.randomUUID().toString().substring(0, 12);
        on(used).body(Map.of("order_no", orderNo, "amount", 700, "currency", "EUR")).post("/orders")
                .then().statusCode(201);
        String token = on(used).post("/tokens").then().statusCode(201).extract().path("token");
        PayRequest request = new PayRequest(orderNo, "req_" + orderNo, token, 700);
        request.on(on(used)).post("/pay").then().statusCode(200);
        return request;
    }

    /** A request for a route with its count read before and after: it was measured once more. */
    private static void assertCounted(AppProcess app, String method, String uri, Runnable request) {
        Map<String, String> route = Map.of("method", method, "uri", uri);
        double before = scrape(app).sum(REQUESTS, route);
        request.run();
        // the timer stops when the answer's last byte is written, a moment after the client may have read it
        Await.until(method + " " + uri + " counted", COUNTED, () -> scrape(app).sum(REQUESTS, route) == before + 1);
        assertEquals(before + 1, scrape(app).sum(REQUESTS, route), 0.001, method + " " + uri + " measured");
    }

    /**
     * A request no route serves: a made-up method (or a standard one) on a made-up path, sent plain, in chunks
     * (411), declaring too long a body (413) or naming two merchants (401), the last three refused before any
     * route is matched.
     */
    private static String madeUpRequest(Random random) {
        String method = random.nextInt(4) == 0 ? SENT_METHODS.get(random.nextInt(SENT_METHODS.size()))
                : word(random, 'A', 3 + random.nextInt(8));
        String path = "/" + word(random, 'a', 1 + random.nextInt(12)) + "/" + random.nextInt(1_000_000);
        String head = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
        return switch (random.nextInt(4)) {
            case 0 -> head + "\r\n";
            case 1 -> head + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
            case 2 -> head + "Content-Length: 1000000\r\n\r\n";
            default -> head + "X-Merchant-Id: a\r\nX-Merchant-Id: b\r\n\r\n";
        };
    }

    private static String word(Random random, char first, int length) {
        StringBuilder word = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            word.append((char) (first + random.nextInt(26)));
        }
        return word.toString();
    }

    /** Sends the request on a connection of its own and reads the answer's head and body. */
    private static void exchange(int port, String request) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = socket.getInputStream();
            StringBuilder head = new StringBuilder();
            while (!head.toString().endsWith("\r\n\r\n")) {
                int b = in.read();
                if (b < 0) {
                    throw new IOException("the connection ended inside the answer's head: " + head);
                }
                head.append((char) b);
            }
            for (String line : head.toString().split("\r\n")) {
                if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                    in.readNBytes(Integer.parseInt(line.substring(line.indexOf(':') + 1).trim()));
                }
            }
            // a refusal lingers reading a body that never comes: the answer is whole, so the client hangs up
        }
    }

    private static Exposition scrape(AppProcess app) {
        return Exposition.parse(app.management().get("/q/metrics").then().statusCode(200).extract().asString());
    }

    private static RequestSpecification on(AppProcess app) {
        return given().baseUri("http://127.0.0.1").port(app.port()).header("X-Merchant-Id", MERCHANT)
                .contentType(ContentType.JSON);
    }
}
