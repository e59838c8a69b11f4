-- The commissioning issues log is kept in events (kinds commissioning
-- and issue, on the module): read by kind for every module at once
-- (sat gate, sat issues list), so events are indexed by kind.
-- postgres/0005_issues.sql is the same for PostgreSQL.
CREATE INDEX events_kind ON events (kind, seq);
