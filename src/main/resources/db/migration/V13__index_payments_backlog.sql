-- The reconciler's search for payments to settle and the backlog gauges read this index alone, however
-- many payments the table holds: the payments of one status (the PROCESSING backlog) by age, with their
-- kind, lease and postponement, which the search filters on and the gauges group by (each entry also
-- holds the primary key, the id the search answers). It replaces ix_payments_status_updated, whose
-- updated_at no statement reads and which the search and the gauges had to leave for the table's rows.
ALTER TABLE payments
    ADD KEY ix_payments_backlog (status, created_at, kind, lease_until, reconcile_after),
    DROP KEY ix_payments_status_updated;
