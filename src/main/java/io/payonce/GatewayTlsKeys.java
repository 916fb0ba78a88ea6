package io.payonce;

import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

import jakarta.annotation.Priority;

import io.smallrye.config.ConfigSourceInterceptor;
import io.smallrye.config.ConfigSourceInterceptorContext;
import io.smallrye.config.ConfigValue;
import io.smallrye.config.Priorities;

/**
 * The instance's certificate, its key and the operator's CA under PayOnce's own keys
 * ({@code payonce.gateway.tls.certificate}, {@code .key}, {@code .ca}) become the TLS registry's configuration
 * {@value PayOnceConfig.Gateway#TLS_CONFIGURATION} ({@code quarkus.tls.payonce.key-store.pem.0.cert}, {@code .key},
 * {@code quarkus.tls.payonce.trust-store.pem.certs}), which the business port and the channel client use under
 * {@code payonce.gateway.client-auth=mtls}. The registry's keys set directly win; they are also the way to
 * anything else the registry offers (PKCS#12, reloading). Only keys that are set appear, so an instance
 * without them has no such TLS configuration at all (an empty one would refuse to start).
 *
 * <p>Why not property expressions in application.properties: the registry's keys would then exist with
 * nothing in them wherever the certificates are not set, and Quarkus refuses a TLS configuration with an
 * empty certificate path. And why not the registry's keys alone: their PEM pair sits under a map key, which an
 * environment variable can name only as {@code QUARKUS_TLS_PAYONCE_KEY_STORE_PEM__0__CERT}.
 *
 * <p>Registered by {@code META-INF/services}, which Quarkus reads when it builds the application (and registers
 * the class for the native image), so it runs at every start of the packaged application and reads the
 * values at that start: none is set, so none is recorded, while the application is built. It wraps the profile interceptor (SmallRye runs the higher priority first), so that
 * {@code %prod.payonce.gateway.tls.*} counts too; the expression interceptor, outside it, expands the values.
 */
@Priority(Priorities.LIBRARY + 250)
public class GatewayTlsKeys implements ConfigSourceInterceptor {

    private static final String REGISTRY = "quarkus.tls." + PayOnceConfig.Gateway.TLS_CONFIGURATION;

    /** The registry's key for each of ours. */
    static final Map<String, String> REGISTRY_KEY_BY_OURS = Map.of(
            "payonce.gateway.tls.certificate", REGISTRY + ".key-store.pem.0.cert",
            "payonce.gateway.tls.key", REGISTRY + ".key-store.pem.0.key",
            "payonce.gateway.tls.ca", REGISTRY + ".trust-store.pem.certs");

    private static final Map<String, String> OURS_BY_REGISTRY_KEY = Map.of(
            REGISTRY + ".key-store.pem.0.cert", "payonce.gateway.tls.certificate",
            REGISTRY + ".key-store.pem.0.key", "payonce.gateway.tls.key",
            REGISTRY + ".trust-store.pem.certs", "payonce.gateway.tls.ca");

    @Override
    public ConfigValue getValue(ConfigSourceInterceptorContext context, String name) {
        ConfigValue value = context.proceed(name);
        String ours = OURS_BY_REGISTRY_KEY.get(name);
        if (value != null || ours == null) {
            return value;
        }
        ConfigValue given = context.proceed(ours);
        return given == null ? null : given.withName(name);
    }

    @Override
    public Iterator<String> iterateNames(ConfigSourceInterceptorContext context) {
        Set<String> names = new LinkedHashSet<>();
        context.iterateNames().forEachRemaining(names::add);
        REGISTRY_KEY_BY_OURS.forEach((ours, registry) -> {
            if (context.proceed(ours) != null) {
                names.add(registry);
            }
        });
        return names.iterator();
    }
}
