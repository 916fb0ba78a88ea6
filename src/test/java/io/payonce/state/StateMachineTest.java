package io.payonce.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

class StateMachineTest {

    enum Light {
        RED,
        GREEN,
        OFF
    }

    private static final StateMachine<Light> LIGHT = StateMachine.of(Light.RED, Map.of(
            Light.RED, Set.of(Light.GREEN, Light.OFF),
            Light.GREEN, Set.of(Light.RED),
            Light.OFF, Set.of()));

    @Test
    void tableThatLeavesAStateOut_isRefused() {
        Map<Light, Set<Light>> withoutOff = Map.of(Light.RED, Set.of(Light.GREEN), Light.GREEN, Set.of(Light.RED));

        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> StateMachine.of(Light.RED, withoutOff));

        assertEquals("no transitions listed for OFF", refused.getMessage());
    }

    @Test
    void listedPair_givesTheTransitionAStatementBinds() {
        StateMachine.Transition<Light> move = LIGHT.move(Light.RED, Light.GREEN);

        assertEquals(Light.RED, move.from());
        assertEquals(Light.GREEN, move.to());
    }

    @Test
    void unlistedPair_isAProgrammingError() {
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> LIGHT.move(Light.GREEN, Light.OFF));

        assertEquals("illegal Light transition GREEN -> OFF", refused.getMessage());
    }

    @Test
    void stateWithoutExits_isFinal() {
        assertTrue(LIGHT.isFinal(Light.OFF));
        assertFalse(LIGHT.isFinal(Light.GREEN));
        assertEquals(Light.RED, LIGHT.initial());
    }

    @Test
    void wholeTable_isCheckedPairByPair() {
        TransitionTables.assertExactly(LIGHT, Light.class, Set.of("RED -> GREEN", "RED -> OFF", "GREEN -> RED"));
    }
}
