-- Reconciliation of payments whose channel outcome is unknown (left PROCESSING).
ALTER TABLE payments
    -- not before this time may a reconciler look at the payment again: set when one claims it (its
    -- lease) and, when the channel still cannot tell, to the next try after backoff
    ADD COLUMN reconcile_after DATETIME(3) NULL,
    -- the reconciler run that holds the payment until reconcile_after
    ADD COLUMN reconcile_claim CHAR(36) NULL,
    -- how many times the channel was queried without a definite answer (drives the backoff)
    ADD COLUMN reconcile_attempts INT NOT NULL DEFAULT 0,
    -- releasing dead token leases asks whether a payment record stands behind the token
    ADD KEY ix_payments_token (merchant_id, token);

-- releasing dead leases looks for tokens in progress whose lease has run out
ALTER TABLE idempotency_tokens ADD KEY ix_tokens_state_lease (state, lease_until);
