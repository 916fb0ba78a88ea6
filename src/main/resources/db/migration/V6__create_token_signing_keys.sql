-- Issued tokens carry their merchant binding and expiry under an HMAC, so issuing one writes
-- nothing: an idempotency_tokens row is created only on the token's first use, in the same
-- transaction that inserts the payment record. This table holds the signing key that every
-- instance on this database shares, unless payonce.token.secret supplies one.
CREATE TABLE token_signing_keys (
    id         SMALLINT     NOT NULL,
    -- 256 random bits, hex; written once by the first instance that starts, never changed
    secret     CHAR(64)     NOT NULL,
    created_at DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
