/**
 * The chaos run: instances behind nginx under seeded faults, clients as real ones behave, and a
 * checker naming each violation of the invariants (scripts/chaos.sh, ChaosIT).
 */
package io.payonce.chaos;
