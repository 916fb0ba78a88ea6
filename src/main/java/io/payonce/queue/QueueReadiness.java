package io.payonce.queue;

import jakarta.enterprise.context.ApplicationScoped;

import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

import io.payonce.PayOnceConfig;

/**
 * Reports the queue entrance without ever failing readiness: with the broker down the HTTP entrance serves
 * as before, and commands wait in the broker (or their producers' confirms fail) until it is back.
 * {@code broker} is {@code up}, {@code degraded} or {@code disabled}.
 */
@Readiness
@ApplicationScoped
public class QueueReadiness implements HealthCheck {

    private final Broker broker;
    private final boolean enabled;

    QueueReadiness(Broker broker, PayOnceConfig config) {
        this.broker = broker;
        this.enabled = config.queue().enabled();
    }

    @Override
    public HealthCheckResponse call() {
        return HealthCheckResponse.named("Queue entrance")
                .up()
                .withData("broker", enabled ? (broker.connected() ? "up" : "degraded") : "disabled")
                .build();
    }
}
