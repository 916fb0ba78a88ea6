-- Refunds join charges in the sandbox's books: one table for both, told apart by kind, each kind a namespace
-- of numbers of its own, so that a refund number equal to some request number is another entry.

ALTER TABLE sandbox_charges
    -- CHARGE or REFUND; for a REFUND, request_no holds the merchant's refund number and txn_id the
    -- channel's refund id (rows recorded before refunds existed are charges)
    ADD COLUMN kind VARCHAR(8) NOT NULL DEFAULT 'CHARGE' AFTER merchant_id,
    -- the sandbox is idempotent by number within a kind: a second charge (refund) returns the first
    ADD UNIQUE KEY uq_sandbox_merchant_request_no_kind (merchant_id, request_no, kind),
    DROP INDEX uq_sandbox_merchant_request_no;

-- Calls that recorded no entry are counted per kind too: the ledger's attempts are charge calls, its
-- refund_attempts refund calls.
ALTER TABLE sandbox_attempts
    -- CHARGE or REFUND: the operation the counted calls asked for
    ADD COLUMN kind VARCHAR(8) NOT NULL DEFAULT 'CHARGE' AFTER order_no,
    -- one counter per merchant, order and kind
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (merchant_id, order_no, kind);
