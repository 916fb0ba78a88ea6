package io.payonce.support;

import static org.junit.jupiter.api.Assertions.assertAll;

import java.util.List;
import java.util.function.Function;

import org.junit.jupiter.api.function.Executable;

import io.payonce.support.PayClient.Intent;

/** Runs one check per payment and reports every failure at once, each named by its payment. */
public final class IntentChecks {

    @FunctionalInterface
    public interface Check {
        void accept(Intent intent) throws Exception;
    }

    private IntentChecks() {
    }

    public static void assertForEach(List<Intent> intents, Function<Intent, String> label, Check check) {
        assertAll(intents.stream().map(intent -> (Executable) () -> {
            try {
                check.accept(intent);
            } catch (AssertionError e) {
                throw new AssertionError(label.apply(intent) + ": " + e.getMessage(), e);
            }
        }));
    }
}
