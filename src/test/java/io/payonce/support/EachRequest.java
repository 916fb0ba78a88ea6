package io.payonce.support;

import static org.junit.jupiter.api.Assertions.assertAll;

import java.util.List;
import java.util.function.Function;

import org.junit.jupiter.api.function.Executable;


/** Runs one check per payment and reports every failure at once, each named by its payment. */
public final class EachRequest {

    @FunctionalInterface
    public interface Check {
        void accept(PayRequest request) throws Exception;
    }

    private EachRequest() {
    }

    public static void assertForEach(List<PayRequest> requests, Function<PayRequest, String> label, Check check) {
        assertAll(requests.stream().map(request -> (Executable) () -> {
            try {
                check.accept(request);
            } catch (AssertionError e) {
                throw new AssertionError(label.apply(request) + ": " + e.getMessage(), e);
            }
        }));
    }
}
