-- Ownership of a payment is fenced: whoever acts on it holds it under an epoch, and every write it makes
-- afterwards names that epoch, so a late owner (paused, slow COMMIT, lease over) changes nothing.

ALTER TABLE payments
    -- the fencing value of the payment's current owner: the opener's is its token claim's epoch, and every
    -- take-over (a reconciler) increments it before it may call the channel; an owner's write (undo, interim
    -- answer, postpone) changes the row only while its epoch is still this one
    ADD COLUMN epoch INT NOT NULL DEFAULT 1;

ALTER TABLE idempotency_tokens
    -- how many times the token was claimed: a first claim sets 1, each claim of a released token adds one;
    -- the claimant's writes on the token (its answer, a release) name it, and its payment is opened under it
    ADD COLUMN epoch INT NOT NULL DEFAULT 1;
