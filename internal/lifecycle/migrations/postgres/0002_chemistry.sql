-- Water chemistry: the lab's samples of each cooling loop, one row per
-- sample (the loop's element key and the lab's sample id), each written
-- with its signed event (kind chemistry) on the loop. A measure not
-- taken is NULL. sqlite/0002_chemistry.sql is the same for SQLite.
CREATE TABLE chem_samples (
  loop          TEXT COLLATE "C" NOT NULL,
  sample_id     TEXT COLLATE "C" NOT NULL,
  taken_at      BIGINT NOT NULL,
  lab           TEXT NOT NULL,
  conductivity  DOUBLE PRECISION,
  ph            DOUBLE PRECISION,
  glycol_pct    DOUBLE PRECISION,
  particulates  DOUBLE PRECISION,
  recorded_at   BIGINT NOT NULL,
  actor         TEXT NOT NULL,
  event         BIGINT NOT NULL,
  PRIMARY KEY (loop, sample_id)
);
CREATE INDEX chem_samples_taken ON chem_samples (loop, taken_at);

CREATE FUNCTION seam_chem_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'water chemistry samples are append-only';
END $$;
CREATE TRIGGER chem_samples_no_update BEFORE UPDATE OR DELETE ON chem_samples
  FOR EACH ROW EXECUTE FUNCTION seam_chem_append_only();

-- the team's roles read the samples; seam_write records them
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'seam_read') THEN
    GRANT SELECT ON chem_samples TO seam_read;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'seam_write') THEN
    GRANT SELECT, INSERT ON chem_samples TO seam_write;
  END IF;
END $$;
