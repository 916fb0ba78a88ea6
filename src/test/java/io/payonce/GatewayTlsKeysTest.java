package io.payonce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfig;
import io.smallrye.config.SmallRyeConfigBuilder;

/**
 * PayOnce's three certificate keys as the TLS registry's configuration "payonce": a configuration exists,
 * with their values, exactly when they are set, and the registry's own keys win.
 */
class GatewayTlsKeysTest {

    private static final String CERT = "quarkus.tls.payonce.key-store.pem.0.cert";
    private static final String KEY = "quarkus.tls.payonce.key-store.pem.0.key";
    private static final String CA = "quarkus.tls.payonce.trust-store.pem.certs";

    @Test
    void ourKeysSet_becomeTheRegistrysConfiguration() {
        SmallRyeConfig config = config(Map.of("payonce.gateway.tls.certificate", "/etc/payonce/service.crt",
                "payonce.gateway.tls.key", "/etc/payonce/service.key", "payonce.gateway.tls.ca", "/etc/payonce/ca.crt"));

        assertEquals("/etc/payonce/service.crt", config.getRawValue(CERT));
        assertEquals("/etc/payonce/service.key", config.getRawValue(KEY));
        assertEquals("/etc/payonce/ca.crt", config.getRawValue(CA));
        assertTrue(names(config).containsAll(Set.of(CERT, KEY, CA)), "the registry finds them: " + names(config));
    }

    @Test
    void nothingSet_noConfigurationAppears() {
        SmallRyeConfig config = config(Map.of("payonce.gateway.client-auth", "none"));

        assertFalse(names(config).stream().anyMatch(name -> name.startsWith("quarkus.tls.")), names(config).toString());
        assertEquals(null, config.getRawValue(CERT));
    }

    @Test
    void theRegistrysOwnKeys_win() {
        SmallRyeConfig config = config(Map.of("payonce.gateway.tls.certificate", "/ours.crt", CERT, "/registry.crt"));

        assertEquals("/registry.crt", config.getRawValue(CERT));
    }

    @Test
    void aProfilesValue_counts() {
        SmallRyeConfig config = config(Map.of("%prod.payonce.gateway.tls.ca", "/prod/ca.crt"));

        assertEquals("/prod/ca.crt", config.getRawValue(CA));
        assertTrue(names(config).contains(CA), names(config).toString());
    }

    private static SmallRyeConfig config(Map<String, String> properties) {
        return new SmallRyeConfigBuilder().addDefaultInterceptors().withProfile("prod")
                .withInterceptors(new GatewayTlsKeys())
                .withSources(new PropertiesConfigSource(properties, "test", 250)).build();
    }

    private static Set<String> names(SmallRyeConfig config) {
        Set<String> names = new HashSet<>();
        config.getPropertyNames().forEach(names::add);
        return names;
    }
}
