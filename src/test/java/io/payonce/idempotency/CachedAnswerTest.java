package io.payonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.api.Test;

/** The cached and published form of an answer reads back as written, whatever the body holds. */
class CachedAnswerTest {

    @Test
    void answer_readsBackAsWritten_evenWithSeparatorsInItsBody() {
        CachedAnswer answer = new CachedAnswer("ab".repeat(32), new StoredResponse(402, "{\"detail\":\"a|b\\n|c\"}|\n"));

        assertEquals(Optional.of(answer), CachedAnswer.decode(Optional.of(answer.encode())));
    }

    @Test
    void interim202_isNotFinal() {
        assertFalse(new CachedAnswer("f", new StoredResponse(202, "{}")).isFinal());
        assertTrue(new CachedAnswer("f", new StoredResponse(200, "{}")).isFinal());
    }

    @Test
    void somethingElse_readsAsNothing() {
        assertTrue(CachedAnswer.decode(Optional.of("{\"fingerprint\":\"x\",\"status\":200,\"body\":\"{}\"}")).isEmpty());
        assertTrue(CachedAnswer.decode(Optional.of("x|y|z")).isEmpty());
        assertTrue(CachedAnswer.decode(Optional.of("-")).isEmpty());
        assertTrue(CachedAnswer.decode(Optional.empty()).isEmpty());
    }
}
