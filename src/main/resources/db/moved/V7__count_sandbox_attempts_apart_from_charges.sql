-- From now on a sandbox charge call that records a charge counts as an attempt through its
-- sandbox_charges row, so recording a charge is one statement and one commit; sandbox_attempts
-- counts only the calls that recorded none (refused before acceptance, or repeating a recorded
-- request number). Counts made before this migration counted every call, so they are reset.
DELETE FROM sandbox_attempts;
