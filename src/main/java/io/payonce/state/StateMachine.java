package io.payonce.state;

import java.util.EnumMap;
import java.util.Map;
import java.util.Set;

/**
 * One state machine's legal transitions, written once: each state enum holds its machine, and every
 * statement that moves a row's state binds a {@link Transition} taken from it, so no statement can move
 * a row along a path the table does not have.
 */
public final class StateMachine<S extends Enum<S>> {

    private final S initial;
    private final Map<S, Set<S>> legal;

    private StateMachine(S initial, Map<S, Set<S>> legal) {
        this.initial = initial;
        this.legal = legal;
    }

    /**
     * The machine whose rows start in {@code initial} and may move from each state to the states
     * {@code legal} lists for it; every state must be listed, a final one with no exits.
     */
    public static <S extends Enum<S>> StateMachine<S> of(S initial, Map<S, Set<S>> legal) {
        Map<S, Set<S>> table = new EnumMap<>(initial.getDeclaringClass());
        for (S state : initial.getDeclaringClass().getEnumConstants()) {
            Set<S> exits = legal.get(state);
            if (exits == null) {
                throw new IllegalArgumentException("no transitions listed for " + state);
            }
            table.put(state, Set.copyOf(exits));
        }
        return new StateMachine<>(initial, table);
    }

    /** The state a new row is created in. */
    public S initial() {
        return initial;
    }

    public boolean allows(S from, S to) {
        return legal.get(from).contains(to);
    }

    /** True for a state no transition leaves. */
    public boolean isFinal(S state) {
        return legal.get(state).isEmpty();
    }

    /**
     * The transition {@code from -> to}; fails with {@link IllegalStateException} when the table does not
     * have it, which is a programming error, never a race (a race shows as a statement changing no row).
     */
    public Transition<S> move(S from, S to) {
        if (!allows(from, to)) {
            throw new IllegalStateException("illegal " + from.getDeclaringClass().getSimpleName() + " transition "
                    + from + " -> " + to);
        }
        return new Transition<>(from, to);
    }

    /**
     * A legal transition, as a conditional statement binds it: {@code WHERE status = from} and
     * {@code SET status = to}. Only {@link StateMachine#move} makes one.
     */
    public static final class Transition<S extends Enum<S>> {

        private final S from;
        private final S to;

        private Transition(S from, S to) {
            this.from = from;
            this.to = to;
        }

        public S from() {
            return from;
        }

        public S to() {
            return to;
        }

        @Override
        public String toString() {
            return from + " -> " + to;
        }
    }
}
