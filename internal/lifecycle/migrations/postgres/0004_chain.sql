-- The history as a hash chain, sealed by its writers: see
-- sqlite/0004_chain.sql.
ALTER TABLE events ADD COLUMN hash TEXT NOT NULL DEFAULT '';

CREATE TABLE seals (
  head      BIGINT PRIMARY KEY,
  at        BIGINT NOT NULL,
  actor     TEXT NOT NULL,
  statement TEXT NOT NULL,
  signature TEXT NOT NULL
);
CREATE TRIGGER seals_no_update BEFORE UPDATE OR DELETE ON seals
  FOR EACH ROW EXECUTE FUNCTION seam_events_append_only();
CREATE TRIGGER seals_no_truncate BEFORE TRUNCATE ON seals
  FOR EACH STATEMENT EXECUTE FUNCTION seam_events_append_only();

CREATE TABLE stamps (
  head  BIGINT PRIMARY KEY,
  at    BIGINT NOT NULL,
  token TEXT NOT NULL
);
CREATE TRIGGER stamps_no_update BEFORE UPDATE OR DELETE ON stamps
  FOR EACH ROW EXECUTE FUNCTION seam_events_append_only();
CREATE TRIGGER stamps_no_truncate BEFORE TRUNCATE ON stamps
  FOR EACH STATEMENT EXECUTE FUNCTION seam_events_append_only();

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'seam_read') THEN
    GRANT SELECT ON seals, stamps TO seam_read;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'seam_write') THEN
    GRANT SELECT, INSERT ON seals, stamps TO seam_write;
  END IF;
END $$;
