-- Recovery settles a charge only on the channel's word, with every time compared on the database's clock.

-- The owner's lease on its payment: until then the process that inserted the record may still be waiting
-- for the channel, and reconciliation leaves the payment alone. Set from the database's clock, like
-- created_at from now on, so instances whose clocks differ agree on every age and lease.
ALTER TABLE payments
    ADD COLUMN lease_until DATETIME(3) NULL,
    -- why a FAILED payment failed, in the channel's words: DECLINED, or CLOSED (closed at the channel
    -- before any charge of it succeeded); NULL otherwise, and for payments failed before this column
    ADD COLUMN failure VARCHAR(16) NULL,
    -- a provider's transaction id may be longer than the 64 characters first allowed; the channel client
    -- drops one that does not fit (the channel's word on the outcome is what settles a payment)
    MODIFY channel_txn_id VARCHAR(255) NULL;

-- The sandbox records a charge the moment it arrives, with the outcome it will have and when.
ALTER TABLE sandbox_charges
    -- SUCCEEDED or DECLINED once effective_at has passed (PENDING before it), or CLOSED: the number was
    -- closed before any charge of it succeeded, and none ever will
    MODIFY status VARCHAR(16) NOT NULL,
    -- when the charge takes effect (the sandbox's latency), on the database's clock: any instance's
    -- sandbox on this database answers from the row, so a charge takes effect on time even if the
    -- process that received it dies
    -- (charges recorded before this column took effect when they were answered, long ago)
    ADD COLUMN effective_at DATETIME(3) NOT NULL DEFAULT '1970-01-02 00:00:00.000',
    -- a close of a number that never arrived records a CLOSED row that knows only the number
    MODIFY order_no VARCHAR(64) NULL,
    MODIFY amount BIGINT NULL,
    MODIFY currency CHAR(3) NULL,
    MODIFY txn_id VARCHAR(64) NULL;
