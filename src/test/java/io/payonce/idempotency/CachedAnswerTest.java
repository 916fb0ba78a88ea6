package io.payonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
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
    void bodyDigest_readsBackAsWritten_andOnlyItsOwnBodyIsTheSame() {
        byte[] body = "{\"order_no\":\"o\"}".getBytes(StandardCharsets.UTF_8);
        CachedAnswer answer = new CachedAnswer("ab".repeat(32), new StoredResponse(200, "{\"a\":\"b;c\"}"),
                Fingerprint.ofBody(body));

        assertEquals(Optional.of(answer), CachedAnswer.decode(Optional.of(answer.encode())));
        assertTrue(answer.sameBody(body.clone()));
        assertFalse(answer.sameBody("{\"order_no\": \"o\"}".getBytes(StandardCharsets.UTF_8)));
        assertFalse(answer.sameBody(new byte[0]));
        assertFalse(new CachedAnswer("f", new StoredResponse(200, "{}")).sameBody(body));
    }

    @Test
    void payloadWithADigest_isNoNumberToAReaderThatKnowsNone() {
        // what a reader that knows no digest parses as the status: the first field whole
        String payload = new CachedAnswer("f", new StoredResponse(200, "{}"), "cd").encode();

        assertThrows(NumberFormatException.class, () -> Integer.parseInt(payload.substring(0, payload.indexOf('|'))));
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
