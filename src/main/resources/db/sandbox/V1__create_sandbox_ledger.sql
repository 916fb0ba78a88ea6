-- The sandbox channel's own books, kept apart from the service's tables as a real provider's would be,
-- in a schema history of their own (sandbox_schema_history), applied only while the sandbox is on.
-- Several instances pointed at one sandbox share these tables and so one ledger.
-- IF NOT EXISTS: a database the service migrated before the sandbox had a history of its own has both
-- tables already, in this shape, from the service's migrations 4, 7 and 9 (database/MovedMigrations).

CREATE TABLE IF NOT EXISTS sandbox_charges (
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    merchant_id  VARCHAR(64)  NOT NULL,
    request_no   VARCHAR(64)  NOT NULL,
    -- order_no, amount, currency and txn_id are NULL only in a CLOSED row of a number that never arrived,
    -- which a close records so that a later charge of the number finds it
    order_no     VARCHAR(64)  NULL,
    amount       BIGINT       NULL,
    currency     CHAR(3)      NULL,
    -- SUCCEEDED or DECLINED once effective_at has passed (PENDING before it), or CLOSED: the number was
    -- closed before any charge of it succeeded, and none ever will
    status       VARCHAR(16)  NOT NULL,
    txn_id       VARCHAR(64)  NULL,
    created_at   DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    -- when the charge takes effect (the sandbox's latency), on the database's clock: any instance's sandbox
    -- on this database answers from the row, so a charge takes effect on time even if the process that
    -- received it dies (the default is for rows recorded before this column existed)
    effective_at DATETIME(3)  NOT NULL DEFAULT '1970-01-02 00:00:00.000',
    PRIMARY KEY (id),
    -- the sandbox is idempotent by request number: a second charge returns the first
    UNIQUE KEY uq_sandbox_merchant_request_no (merchant_id, request_no),
    KEY ix_sandbox_order (merchant_id, order_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Charge calls per order that recorded no charge (refused before acceptance, or repeating a recorded
-- request number); a call that recorded one counts through its sandbox_charges row. The ledger's
-- "attempts" is the sum of both.
CREATE TABLE IF NOT EXISTS sandbox_attempts (
    merchant_id VARCHAR(64) NOT NULL,
    order_no    VARCHAR(64) NOT NULL,
    attempts    INT         NOT NULL,
    PRIMARY KEY (merchant_id, order_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
