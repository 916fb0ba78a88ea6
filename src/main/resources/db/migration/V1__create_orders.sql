-- All times are UTC, written by the application (DATETIME: no session time-zone conversion).
-- An order a merchant wants paid. Moved only by conditional updates on (status, version).
CREATE TABLE orders (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    merchant_id VARCHAR(64)  NOT NULL,
    order_no    VARCHAR(64)  NOT NULL,
    -- minor units (cents), always > 0
    amount      BIGINT       NOT NULL,
    -- ISO 4217 code, upper case
    currency    CHAR(3)      NOT NULL,
    -- PENDING, PAYING or PAID; see OrderStatus for the legal transitions
    status      VARCHAR(16)  NOT NULL,
    -- incremented by every transition; a transition names the version it read
    version     INT          NOT NULL DEFAULT 0,
    created_at  DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at  DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    -- one order per merchant order number
    UNIQUE KEY uq_orders_merchant_order_no (merchant_id, order_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
