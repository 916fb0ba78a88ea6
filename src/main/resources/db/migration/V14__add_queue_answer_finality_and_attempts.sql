-- The queue entrance's answers say whether they are final, and its commands are counted by PayOnce rather
-- than by the broker, so that no command that executed is ever dead-lettered for being delivered often.

ALTER TABLE queue_outbox
    -- 1 on a final answer (stored, or a refusal no retry changes, and every AWAITING row's settled answer);
    -- 0 on a 202 or a retryable refusal: a producer keeps the answer marked final
    ADD COLUMN is_final TINYINT(1) NOT NULL DEFAULT 1;

-- Deliveries of one command (merchant and idempotency key) after its first, counted when the broker delivers
-- it again and the database answers; past payonce.queue.retries a command is dead-lettered only once its
-- token shows it never executed.
CREATE TABLE queue_attempts (
    merchant_id VARCHAR(64)  NOT NULL,
    idem_key    VARCHAR(255) NOT NULL,
    attempts    INT          NOT NULL,
    updated_at  DATETIME(3)  NOT NULL,
    -- one count per command
    PRIMARY KEY (merchant_id, idem_key),
    -- the purge of counts older than any token can live
    KEY ix_attempts_updated (updated_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

ALTER TABLE queue_outbox
    -- how often the broker returned the answer as unroutable (its reply queue missing, perhaps on a node that
    -- is down): the answer stays owed and is sent again after a backoff that doubles each time
    ADD COLUMN send_attempts INT NOT NULL DEFAULT 0;
