package io.payonce.api;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.ws.rs.core.HttpHeaders;

import io.payonce.PayOnceConfig;

/** Reads the merchant the gateway authenticated; every business endpoint starts here. */
@ApplicationScoped
public class Merchants {

    private final String header;

    Merchants(PayOnceConfig config) {
        this.header = config.merchantHeader();
    }

    public String require(HttpHeaders headers) {
        String value = headers.getHeaderString(header);
        if (value == null || value.isEmpty()) {
            throw new MerchantRequiredException("header " + header + " is required");
        }
        if (!Identifiers.valid(value)) {
            throw new MerchantRequiredException("header " + header + " must match " + Identifiers.REGEX);
        }
        return value;
    }
}
