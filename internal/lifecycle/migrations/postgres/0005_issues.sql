-- The commissioning issues log is kept in events: see
-- sqlite/0005_issues.sql.
CREATE INDEX events_kind ON events (kind, seq);
