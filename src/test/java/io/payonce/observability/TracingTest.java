package io.payonce.observability;

import static io.payonce.support.Fixtures.pay;
import static io.payonce.support.Fixtures.payRequest;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

import jakarta.inject.Inject;

import org.junit.jupiter.api.Test;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.payonce.support.Await;
import io.payonce.support.Fixtures;
import io.payonce.support.PayRequest;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * With tracing turned on, one payment is one trace: its HTTP entrance, its MySQL statements, its Redis calls
 * and its call to the channel.
 */
@QuarkusTest
@TestProfile(TracingTest.TracingOn.class)
class TracingTest {

    public static class TracingOn implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("quarkus.otel.sdk.disabled", "false", "quarkus.otel.bsp.schedule.delay", "50ms");
        }

        @Override
        public Set<Class<?>> getEnabledAlternatives() {
            return Set.of(RecordedSpans.class);
        }
    }

    private static final Duration EXPORTED = Duration.ofSeconds(10);
    private static final AttributeKey<String> DB_SYSTEM = AttributeKey.stringKey("db.system");
    private static final AttributeKey<String> DB_STATEMENT = AttributeKey.stringKey("db.statement");

    @Inject
    RecordedSpans spans;

    @Test
    void aPayment_isOneTrace_ofItsEntranceDatabaseRedisAndChannelCalls() {
        Fixtures.sandboxNormal();
        PayRequest request = payRequest();

        pay(request).then().statusCode(200);

        SpanData entrance = Await.until("the span of POST /pay", EXPORTED, () -> first(span -> span.getKind() == SpanKind.SERVER
                && span.getName().equals("POST /pay")), span -> span != null);
        String trace = entrance.getTraceId();
        Await.until("MySQL, Redis and channel spans in the payment's trace", EXPORTED, () -> new Trace(
                spans.all().stream().filter(span -> span.getTraceId().equals(trace)).toList()), Trace::complete);
    }

    /** The spans of one trace, shown by kind, name and attributes when a wait for them fails. */
    private record Trace(List<SpanData> spans) {

        boolean complete() {
            // the SQL client's spans name the database in db.system; their statement tells them apart
            return spans.stream().anyMatch(span -> span.getAttributes().get(DB_STATEMENT) != null)
                    && spans.stream().anyMatch(span -> "redis".equals(span.getAttributes().get(DB_SYSTEM)))
                    && spans.stream().anyMatch(span -> span.getKind() == SpanKind.CLIENT && span.getName().startsWith("POST"));
        }

        @Override
        public String toString() {
            StringBuilder out = new StringBuilder();
            spans.forEach(s -> out.append("\n  ").append(s.getKind()).append(' ').append(s.getName()).append(' ')
                    .append(s.getAttributes()));
            return out.toString();
        }
    }

    private SpanData first(Predicate<SpanData> which) {
        return spans.all().stream().filter(which).findFirst().orElse(null);
    }
}
