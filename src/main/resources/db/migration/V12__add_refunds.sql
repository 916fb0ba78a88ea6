-- Refunds: a second kind of money movement at the channel, kept with the charges so that one executor,
-- one fencing epoch and one reconciler serve both.

ALTER TABLE payments
    -- CHARGE (a payment attempt, request_no its number) or REFUND (request_no holds the refund_no):
    -- the channel keeps the two kinds of numbers apart, and so does this table
    ADD COLUMN kind VARCHAR(8) NOT NULL DEFAULT 'CHARGE',
    DROP INDEX uq_payments_merchant_request_no,
    -- one record per merchant number and kind (layer 2 for charges and for refunds alike); a lookup by
    -- (merchant_id, request_no) still uses the index's prefix
    ADD UNIQUE KEY uq_payments_merchant_number_kind (merchant_id, request_no, kind);

ALTER TABLE orders
    -- PARTIALLY_REFUNDED is longer than the 16 characters first allowed
    MODIFY status VARCHAR(24) NOT NULL,
    -- what refunds that succeeded at the channel gave back, in minor units
    ADD COLUMN refunded_amount BIGINT NOT NULL DEFAULT 0,
    -- what refunds in flight (sent, or about to be, and not settled) may still give back; reserved by a
    -- refund's opening and released only when the channel's word says it did not happen. Invariant, held by
    -- a conditional update: refunded_amount + reserved_amount <= amount
    ADD COLUMN reserved_amount BIGINT NOT NULL DEFAULT 0;
