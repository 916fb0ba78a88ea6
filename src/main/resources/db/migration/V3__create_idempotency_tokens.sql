-- An idempotency token: one client operation. Bound to a request fingerprint on first use,
-- then holds the first execution's final answer, which every duplicate receives.
CREATE TABLE idempotency_tokens (
    id               BIGINT       NOT NULL AUTO_INCREMENT,
    merchant_id      VARCHAR(64)  NOT NULL,
    -- issued (tok_ + 192 random bits, URL-safe) or, when enabled, a client-generated key
    token            VARCHAR(255) NOT NULL,
    -- AVAILABLE (never used, or released after a transient failure), IN_PROGRESS, COMPLETED
    state            VARCHAR(16)  NOT NULL,
    -- SHA-256 (hex) of the canonical request; NULL until first use, never changed after
    fingerprint      CHAR(64)     NULL,
    -- the request number the first use named
    request_no       VARCHAR(64)  NULL,
    -- while IN_PROGRESS: the owner holds the token until then; past it a dead owner's token
    -- can be released
    lease_until      DATETIME(3)   NULL,
    -- the answer stored for duplicates: final once COMPLETED; while IN_PROGRESS a 202 here means
    -- the channel's outcome is unknown
    response_status  SMALLINT     NULL,
    response_body    TEXT         NULL,
    expires_at       DATETIME(3)   NOT NULL,
    created_at       DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at       DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    -- one token per token value within a merchant; issued values are random and so unique
    -- across merchants too, client keys are the merchant's own namespace
    UNIQUE KEY uq_tokens_merchant_token (merchant_id, token),
    -- purge of expired tokens in bounded batches
    KEY ix_tokens_expires (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
