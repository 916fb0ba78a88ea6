package io.payonce.state;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.function.Executable;

/** Checks a machine against its whole table, pair by pair. */
public final class TransitionTables {

    private TransitionTables() {
    }

    /**
     * Asserts that {@code machine} allows exactly the pairs in {@code legal}, each written "FROM -> TO", makes
     * a transition for each of them and refuses to make one for every other pair of states.
     */
    public static <S extends Enum<S>> void assertExactly(StateMachine<S> machine, Class<S> type, Set<String> legal) {
        List<Executable> checks = new ArrayList<>();
        for (S from : type.getEnumConstants()) {
            for (S to : type.getEnumConstants()) {
                String pair = from + " -> " + to;
                if (legal.contains(pair)) {
                    checks.add(() -> assertEquals(pair, machine.move(from, to).toString()));
                } else {
                    checks.add(() -> assertFalse(machine.allows(from, to), pair + " allowed"));
                    checks.add(() -> assertThrows(IllegalStateException.class, () -> machine.move(from, to), pair));
                }
            }
        }
        assertAll(checks);
    }
}
