package io.payonce.sandbox;

import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Singleton;

import org.eclipse.microprofile.config.Config;
import org.flywaydb.core.Flyway;

import io.payonce.PayOnceConfig;
import io.quarkus.flyway.FlywayDataSource;
import io.quarkus.runtime.StartupEvent;

/**
 * What {@value #KEY} does at start, so that one packaged application runs with the sandbox on and off. On, the
 * sandbox's tables are made or brought up to date by its own migrations ({@code db/sandbox}, recorded in
 * {@code sandbox_schema_history}), after the service's own, before anything is served; off, nothing of it is
 * created, {@link SandboxResource}'s endpoints answer 404 like any unknown path ({@link SandboxOff}) and
 * {@link SandboxDocument} takes them out of the API document. Turning it on later for the same database
 * creates its tables then.
 */
@Singleton
class SandboxSwitch {

    static final String KEY = "payonce.sandbox.enabled";

    void atStart(@Observes StartupEvent start, PayOnceConfig payOnce, Config config,
            @FlywayDataSource("sandbox") Instance<Flyway> sandboxMigrations) {
        String value = config.getConfigValue(KEY).getValue();
        // a value other than true or false is a mistake to name, not a sandbox quietly off
        if (value != null && !value.equals("true") && !value.equals("false")) {
            throw new SandboxSwitchInvalidException(value);
        }
        if (payOnce.sandbox().enabled()) {
            sandboxMigrations.get().migrate();
        }
    }

    /** Thrown at start when {@value #KEY} is set to something other than {@code true} or {@code false}. */
    static final class SandboxSwitchInvalidException extends RuntimeException {
        SandboxSwitchInvalidException(String value) {
            super("refusing to start: " + KEY + " is \"" + value + "\": set it to true or false", null, false,
                    false);
        }
    }
}
