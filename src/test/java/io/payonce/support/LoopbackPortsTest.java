package io.payonce.support;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.Test;

class LoopbackPortsTest {

    /** As many as a few clusters' listeners: found one after the other, each closed before the next. */
    private static final int PORTS = 500;

    @Test
    void portsTakenOneAfterAnother_noneIsHandedOutTwice() throws Exception {
        Set<Integer> ports = new HashSet<>();
        for (int i = 0; i < PORTS; i++) {
            ports.add(LoopbackPorts.take());
        }

        assertEquals(PORTS, ports.size(), "distinct ports");
    }
}
