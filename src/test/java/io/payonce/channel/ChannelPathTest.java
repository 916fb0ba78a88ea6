package io.payonce.channel;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** A number in a query's or a close's path is one segment, whatever it holds. */
class ChannelPathTest {

    @Test
    void theIdentifiersTheApiAccepts_passAsTheyAre() {
        assertEquals("req_1-AZaz09", PaymentChannel.segment("req_1-AZaz09"));
    }

    @Test
    void anythingElse_isPercentEncoded_aSpaceAsPercent20() {
        assertEquals("a%20b%2F..%3F%23%25%C3%A9", PaymentChannel.segment("a b/..?#%é"));
    }
}
