package io.payonce.sandbox;

import jakarta.inject.Provider;
import jakarta.inject.Singleton;
import jakarta.ws.rs.NotFoundException;

import org.jboss.resteasy.reactive.server.ServerRequestFilter;
import org.jboss.resteasy.reactive.server.SimpleResourceInfo;

import io.payonce.PayOnceConfig;

/**
 * With the sandbox off, {@link SandboxResource}'s endpoints answer 404 {@code not_found}, like any unknown
 * path. Decided per request from the configuration the instance started with, not by an annotation such as
 * {@code @EndpointDisabled}: that one is read while the application is initialised, which a native build does
 * at build time, so a native executable kept the build's value whatever it was started with.
 */
@Singleton
class SandboxOff {

    /** Read per request: filters are made while the application is initialised, before run-time configuration. */
    private final Provider<PayOnceConfig> config;

    SandboxOff(Provider<PayOnceConfig> config) {
        this.config = config;
    }

    @ServerRequestFilter
    void refuse(SimpleResourceInfo resource) {
        if (resource.getResourceClass() == SandboxResource.class && !config.get().sandbox().enabled()) {
            throw new NotFoundException();
        }
    }
}
