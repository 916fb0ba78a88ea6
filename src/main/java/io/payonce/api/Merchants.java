package io.payonce.api;

import java.util.List;

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
        List<String> values = headers.getRequestHeader(header);
        if (values != null && values.size() > 1) {
            // two merchants named: whichever a reader took, another may have authorised the other
            throw new MerchantRequiredException("header " + header + " must appear once");
        }
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
