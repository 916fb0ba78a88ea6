package io.payonce.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** The cached and published form of an answer reads back as written, whatever the body holds. */
class CachedResultTest {

    @Test
    void answer_readsBackAsWritten_evenWithSeparatorsInItsBody() {
        CachedResult answer = new CachedResult("ab".repeat(32), 402, "{\"detail\":\"a|b\\n|c\"}|\n");

        assertEquals(answer, CachedResult.decode(answer.encode()));
    }

    @Test
    void notice_readsBackAsANotice() {
        assertFalse(CachedResult.decode(CachedResult.wakeUp().encode()).isAnswer());
    }

    @Test
    void somethingElse_readsAsNothing() {
        assertNull(CachedResult.decode("{\"fingerprint\":\"x\",\"status\":200,\"body\":\"{}\"}"));
        assertNull(CachedResult.decode("x|y|z"));
        assertNull(CachedResult.decode(null));
    }
}
