-- The sandbox channel's own books, kept apart from the service's tables as a real provider's
-- would be. Several instances pointed at one sandbox share these tables and so one ledger.
CREATE TABLE sandbox_charges (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    merchant_id VARCHAR(64)  NOT NULL,
    request_no  VARCHAR(64)  NOT NULL,
    order_no    VARCHAR(64)  NOT NULL,
    amount      BIGINT       NOT NULL,
    currency    CHAR(3)      NOT NULL,
    -- SUCCEEDED or DECLINED
    status      VARCHAR(16)  NOT NULL,
    txn_id      VARCHAR(64)  NOT NULL,
    created_at  DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    -- the sandbox is idempotent by request number: a second charge returns the first
    UNIQUE KEY uq_sandbox_merchant_request_no (merchant_id, request_no),
    KEY ix_sandbox_order (merchant_id, order_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Charge calls that arrived per order, whatever their outcome (the ledger's "attempts").
CREATE TABLE sandbox_attempts (
    merchant_id VARCHAR(64) NOT NULL,
    order_no    VARCHAR(64) NOT NULL,
    attempts    INT         NOT NULL,
    PRIMARY KEY (merchant_id, order_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
