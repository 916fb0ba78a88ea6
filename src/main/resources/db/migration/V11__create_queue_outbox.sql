-- Answers of the queue entrance on their way to the commands' reply queues. A delivery is acknowledged
-- only once its answer is a row here (committed); a publisher on any instance sends READY rows with
-- publisher confirms and then deletes them, so an answer survives a crash between commit and publish
-- (it may be sent twice; the reply's reader dedupes by correlation id). A 202 sent to a command stays
-- as AWAITING until the command's token holds its final answer (stored by whoever settles the payment),
-- which is then sent to the same reply queue.
CREATE TABLE queue_outbox (
    id             BIGINT        NOT NULL AUTO_INCREMENT,
    -- READY (to send), AWAITING (a 202 was sent; the final answer follows once the token holds it)
    state          VARCHAR(16)   NOT NULL,
    -- the command's merchant and idempotency key; NULL for a refusal that no token stands behind
    merchant_id    VARCHAR(64)   NULL,
    token          VARCHAR(255)  NULL,
    reply_to       VARCHAR(255)  NOT NULL,
    correlation_id VARCHAR(255)  NULL,
    -- the HTTP status an HTTP client would get, the problem code of a refusal, the body's bytes
    status         SMALLINT      NOT NULL,
    code           VARCHAR(64)   NULL,
    replayed       TINYINT(1)    NOT NULL,
    body           TEXT          NOT NULL,
    -- a publisher's claim on the row while it sends it: who, and until when (then another may)
    claimed_by     CHAR(36)      NULL,
    claimed_until  DATETIME(3)   NULL,
    created_at     DATETIME(3)   NOT NULL,
    PRIMARY KEY (id),
    -- the publisher's scan, oldest first
    KEY ix_outbox_state (state, id),
    -- an AWAITING row's token, joined when the token completes
    KEY ix_outbox_token (merchant_id, token),
    KEY ix_outbox_claim (claimed_by)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
