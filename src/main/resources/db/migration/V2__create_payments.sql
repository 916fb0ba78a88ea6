-- One payment attempt: one charge sent (or about to be sent) to the channel under request_no.
CREATE TABLE payments (
    id             BIGINT       NOT NULL AUTO_INCREMENT,
    merchant_id    VARCHAR(64)  NOT NULL,
    -- the merchant's unique request number; the channel receives it as the merchant's
    -- unique number, and every retry or query uses the same one
    request_no     VARCHAR(64)  NOT NULL,
    order_no       VARCHAR(64)  NOT NULL,
    -- the idempotency token whose first execution created this record
    -- NULL when a caller without a token (a job, a queue consumer) made the record
    token          VARCHAR(255) NULL,
    amount         BIGINT       NOT NULL,
    currency       CHAR(3)      NOT NULL,
    -- PROCESSING until the channel's outcome is known, then SUCCEEDED or FAILED
    status         VARCHAR(16)  NOT NULL,
    -- the channel's transaction id, once the channel told it
    channel_txn_id VARCHAR(64)  NULL,
    created_at     DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at     DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    -- one payment record per merchant request number, whatever path the request came by
    UNIQUE KEY uq_payments_merchant_request_no (merchant_id, request_no),
    KEY ix_payments_order (merchant_id, order_no),
    -- reconciliation scans PROCESSING payments by age
    KEY ix_payments_status_updated (status, updated_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
