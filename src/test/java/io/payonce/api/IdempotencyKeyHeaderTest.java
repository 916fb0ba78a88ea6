package io.payonce.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

import io.payonce.idempotency.IdempotencyKeyMissingException;
import io.payonce.idempotency.InvalidIdempotencyTokenException;

/**
 * The Idempotency-Key header as {@link PayResource#token} reads it, the replay route included: bare, or an
 * RFC 8941 sf-string whose only escapes are {@code \"} and {@code \\}. A string without escapes is read by a
 * shortcut; these cases hold it to what the full reading gives.
 */
class IdempotencyKeyHeaderTest {

    @Test
    void aQuotedKeyWithoutEscapes_isWhatIsBetweenTheQuotes() {
        assertEquals("tok_abc-_09", PayResource.token("\"tok_abc-_09\"", null));
        assertEquals("a b", PayResource.token("  \"a b\"  ", null));
        assertEquals("'", PayResource.token("\"'\"", null));
    }

    @Test
    void aBareKey_isTakenAsItIs() {
        assertEquals("tok_abc", PayResource.token("tok_abc", null));
        assertEquals("\"", PayResource.token("\"", null));
        assertEquals("a\"", PayResource.token("a\"", null));
        assertEquals("\"a", PayResource.token("\"a", null));
    }

    @Test
    void theTwoEscapes_areRead() {
        assertEquals("a\"b", PayResource.token("\"a\\\"b\"", null));
        assertEquals("a\\b", PayResource.token("\"a\\\\b\"", null));
        assertEquals("\"\\", PayResource.token("\"\\\"\\\\\"", null));
    }

    @Test
    void aQuoteInside_orAnyOtherEscape_isNoKey() {
        assertThrows(InvalidIdempotencyTokenException.class, () -> PayResource.token("\"a\"b\"", null));
        assertThrows(InvalidIdempotencyTokenException.class, () -> PayResource.token("\"\"\"", null));
        assertThrows(InvalidIdempotencyTokenException.class, () -> PayResource.token("\"a\\b\"", null));
        assertThrows(InvalidIdempotencyTokenException.class, () -> PayResource.token("\"a\\\"", null));
    }

    @Test
    void anEmptyString_isNoKeyAtAll() {
        assertThrows(IdempotencyKeyMissingException.class, () -> PayResource.token("\"\"", null));
        assertThrows(IdempotencyKeyMissingException.class, () -> PayResource.token(" ", null));
    }
}
