package io.payonce.support;

import static io.restassured.RestAssured.given;

import java.time.Duration;

import org.eclipse.microprofile.config.ConfigProvider;

import io.restassured.path.json.JsonPath;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;

/**
 * What an operator sees on the management interface: counters from /q/metrics and the Redis fast path's
 * readiness. In a {@code @QuarkusTest} that interface listens on {@code quarkus.management.test-port}.
 */
public final class Operations {

    private Operations() {
    }

    /** A request to the management interface of the application a {@code @QuarkusTest} runs. */
    public static RequestSpecification management() {
        int port = ConfigProvider.getConfig().getOptionalValue("quarkus.management.test-port", Integer.class)
                .orElse(9001);
        return given().port(port);
    }

    /** The readiness answer: overall status and the "Redis fast path" check's data. */
    public record Readiness(int httpStatus, String status, String redis, String wakeUps) {

        @Override
        public String toString() {
            return "status=" + status + " (HTTP " + httpStatus + "), redis=" + redis + ", wake_ups=" + wakeUps;
        }
    }

    /**
     * The value of one Prometheus series, e.g. {@code payonce_replays_total{source="redis"}}; 0 while the
     * counter does not exist yet.
     */
    public static double metric(String series) {
        double sum = 0;
        for (String line : metrics(management()).split("\n")) {
            if (line.startsWith(series + " ")) {
                sum += Double.parseDouble(line.substring(series.length() + 1).trim());
            }
        }
        return sum;
    }

    /** The sum of every series of a counter, whatever its labels, e.g. all {@code op}s of the fallbacks. */
    public static double metricSum(String name) {
        return metricSum(management(), name);
    }

    /** {@link #metricSum(String)} of an IT's {@link AppProcess}. */
    public static double metricSum(AppProcess app, String name) {
        return metricSum(app.management(), name);
    }

    public static double replays(String source) {
        return metric("payonce_replays_total{source=\"" + source + "\"}");
    }

    public static double stopped(String layer) {
        return metric("payonce_duplicates_stopped_total{layer=\"" + layer + "\"}");
    }

    public static double redisFallbacks() {
        return metricSum("payonce_redis_fallbacks_total");
    }

    public static Readiness readiness() {
        Response response = management().get("/q/health/ready");
        JsonPath json = JsonPath.from(response.asString());
        String check = "checks.find { it.name == 'Redis fast path' }.data";
        return new Readiness(response.statusCode(), json.getString("status"), json.getString(check + ".redis"),
                json.getString(check + ".wake_ups"));
    }

    /**
     * Readiness once the fast path reports {@code redis} (and {@code wakeUps}, unless null); fails with the
     * last answer seen after {@code bound}.
     */
    public static Readiness awaitRedis(String redis, String wakeUps, Duration bound) {
        return Await.until("readiness to show redis=" + redis + (wakeUps == null ? "" : ", wake_ups=" + wakeUps), bound,
                Operations::readiness,
                last -> redis.equals(last.redis()) && (wakeUps == null || wakeUps.equals(last.wakeUps())));
    }

    private static double metricSum(RequestSpecification instance, String name) {
        double sum = 0;
        for (String line : metrics(instance).split("\n")) {
            if (line.startsWith(name + "{") || line.startsWith(name + " ")) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1).trim());
            }
        }
        return sum;
    }

    private static String metrics(RequestSpecification instance) {
        return instance.get("/q/metrics").then().statusCode(200).extract().asString();
    }
}
