package io.payonce.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.util.List;
import java.util.Map;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import io.quarkus.test.junit.QuarkusTestProfile;

/**
 * The service under test with its reactive datasource behind a {@link MysqlProxy} in front of the test
 * database, so that a test can hold or forge what MariaDB answers the service ({@link #proxy()}); Flyway's JDBC
 * connection goes direct. The database is the one the reactive URL names without the profile (the environment's,
 * as an isolated run sets it, else application.properties').
 */
public class BehindMysqlProxy implements QuarkusTestProfile {

    private static final String DEFAULT_REACTIVE_URL = "mysql://127.0.0.1:3306/test";

    @Override
    public List<TestResourceEntry> testResources() {
        return List.of(new TestResourceEntry(Proxy.class));
    }

    /** The proxy in front of the running service's database. */
    public static MysqlProxy proxy() {
        MysqlProxy running = Proxy.running;
        if (running == null) {
            throw new IllegalStateException("no service runs behind a MySQL proxy: the test needs @TestProfile("
                    + BehindMysqlProxy.class.getSimpleName() + ".class)");
        }
        return running;
    }

    /** Starts the proxy before the service and points the service's reactive datasource at it. */
    public static class Proxy implements QuarkusTestResourceLifecycleManager {

        private static volatile MysqlProxy running;

        @Override
        public Map<String, String> start() {
            URI direct = URI.create(System.getenv().getOrDefault("QUARKUS_DATASOURCE_REACTIVE_URL", DEFAULT_REACTIVE_URL));
            try {
                running = new MysqlProxy(direct.getPort());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return Map.of("quarkus.datasource.reactive.url",
                    "mysql://127.0.0.1:" + running.port() + direct.getRawPath());
        }

        @Override
        public void stop() {
            if (running != null) {
                running.close();
                running = null;
            }
        }
    }
}
