package io.payonce.observability;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.enterprise.inject.Alternative;
import jakarta.inject.Singleton;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.quarkus.arc.Unremovable;

/**
 * A span exporter that keeps what it is given, for {@link TracingTest}: an alternative, so only a test profile
 * that enables it has one; Quarkus' OpenTelemetry sends spans to every exporter bean (and to no OTLP
 * collector when there is one).
 */
@Alternative
@Singleton
@Unremovable
public class RecordedSpans implements SpanExporter {

    private final List<SpanData> spans = new CopyOnWriteArrayList<>();

    @Override
    public CompletableResultCode export(Collection<SpanData> exported) {
        spans.addAll(exported);
        return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode flush() {
        return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
        return CompletableResultCode.ofSuccess();
    }

    List<SpanData> all() {
        return List.copyOf(spans);
    }
}
