package io.payonce.api;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

import io.payonce.PayOnceConfig;
import io.payonce.PayOnceConfig.Gateway;
import io.payonce.PayOnceConfig.Gateway.ClientAuth;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.tls.TlsConfiguration;
import io.quarkus.tls.TlsConfigurationRegistry;
import io.quarkus.vertx.http.HttpServerOptionsCustomizer;
import io.vertx.core.http.HttpServerOptions;

/**
 * Only the gateway gets in under {@code payonce.gateway.client-auth=mtls}: the business port's TLS server
 * requires a client certificate that chains to the operator's CA (the TLS configuration's trust store), so a
 * caller without the gateway's certificate fails the handshake and never reaches the merchant header the
 * service believes. Quarkus' own switch for that, {@code quarkus.http.ssl.client-auth}, is fixed when the
 * application is built; this sets it on the TLS server at each start instead, so that one packaged
 * application serves either mode. (application.properties derives the rest: TLS only, on the business port,
 * with the configuration {@value Gateway#TLS_CONFIGURATION}.)
 *
 * <p>An instance in mtls mode whose TLS configuration lacks its certificate, its key or the CA refuses to
 * start, naming the keys to set; it never serves the business API over plain HTTP instead.
 */
@Singleton
public class GatewayClientAuth implements HttpServerOptionsCustomizer {

    private static final String PREFIX = "quarkus.tls." + Gateway.TLS_CONFIGURATION;

    /** A configuration the service must not run with, naming the keys to set. */
    public static final class ClientCertificatesMissingException extends RuntimeException {
        ClientCertificatesMissingException(String message) {
            super(message, null, false, false);
        }
    }

    private final boolean mtls;
    private final TlsConfigurationRegistry registry;

    GatewayClientAuth(PayOnceConfig config, TlsConfigurationRegistry registry) {
        this.mtls = config.gateway().clientAuth() == ClientAuth.MTLS;
        this.registry = registry;
    }

    @Override
    public void customizeHttpsServer(HttpServerOptions options) {
        if (mtls) {
            options.setClientAuth(io.vertx.core.http.ClientAuth.REQUIRED);
        }
    }

    void check(@Observes StartupEvent start) {
        if (!mtls) {
            return;
        }
        List<String> missing = missing(registry.get(Gateway.TLS_CONFIGURATION));
        if (!missing.isEmpty()) {
            throw new ClientCertificatesMissingException("refusing to start: payonce.gateway.client-auth is mtls "
                    + "(the business API over TLS only, the gateway's client certificate required), but not set: "
                    + String.join("; ", missing) + ". Give PEM files (docs/gateway.md; scripts/dev-ca.sh makes a "
                    + "development set), or set payonce.gateway.client-auth=none where the network alone decides "
                    + "who may call");
        }
    }

    /** What the TLS configuration lacks, each with the keys that give it. */
    private static List<String> missing(Optional<TlsConfiguration> configuration) {
        List<String> missing = new ArrayList<>();
        if (configuration.map(TlsConfiguration::getKeyStore).isEmpty()) {
            missing.add("the instance's certificate and key, payonce.gateway.tls.certificate and "
                    + "payonce.gateway.tls.key (or a key store under " + PREFIX + ".key-store)");
        }
        if (configuration.map(TlsConfiguration::getTrustStore).isEmpty()) {
            missing.add("the CA the gateway's certificate must chain to, payonce.gateway.tls.ca (or a trust store "
                    + "under " + PREFIX + ".trust-store)");
        }
        return missing;
    }
}
