package io.payonce.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.api.Test;

/** The cached and published form of an answer reads back as written, whatever the body holds. */
class CachedResultTest {

    @Test
    void answer_readsBackAsWritten_evenWithSeparatorsInItsBody() {
        CachedResult answer = new CachedResult("ab".repeat(32), 402, "{\"detail\":\"a|b\\n|c\"}|\n");

        assertEquals(Optional.of(answer), CachedResult.decode(answer.encode()));
    }

    @Test
    void wakeUp_readsAsNoAnswer() {
        assertTrue(CachedResult.decode(CachedResult.WAKE_UP).isEmpty());
    }

    @Test
    void somethingElse_readsAsNothing() {
        assertTrue(CachedResult.decode("{\"fingerprint\":\"x\",\"status\":200,\"body\":\"{}\"}").isEmpty());
        assertTrue(CachedResult.decode("x|y|z").isEmpty());
        assertTrue(CachedResult.decode(null).isEmpty());
    }
}
