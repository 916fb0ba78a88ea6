-- The settlement is one multi-table UPDATE. MariaDB updates the first table of such a statement in
-- place and carries the new values for the others in an internal temporary table, which can stay in
-- memory only while it has no BLOB or TEXT column: with response_body TEXT every settlement created
-- and removed an on-disk (Aria) temporary table, some 15 % of MariaDB's CPU per payment in open().
-- A stored answer is a PayOnce body of bounded fields (order and request numbers of at most 64
-- characters, fixed titles and details), under 600 characters; 2048 leaves room to spare and keeps
-- the row well within InnoDB's limits on MySQL 8 and MariaDB alike.
ALTER TABLE idempotency_tokens MODIFY response_body VARCHAR(2048) NULL;
