-- Water chemistry: the lab's samples of each cooling loop, one row per
-- sample (the loop's element key and the lab's sample id), each written
-- with its signed event (kind chemistry) on the loop. A measure not
-- taken is NULL. postgres/0002_chemistry.sql is the same for PostgreSQL.
CREATE TABLE chem_samples (
  loop          TEXT NOT NULL,
  sample_id     TEXT NOT NULL,
  taken_at      BIGINT NOT NULL,
  lab           TEXT NOT NULL,
  conductivity  REAL,
  ph            REAL,
  glycol_pct    REAL,
  particulates  REAL,
  recorded_at   BIGINT NOT NULL,
  actor         TEXT NOT NULL,
  event         BIGINT NOT NULL,
  PRIMARY KEY (loop, sample_id)
);
CREATE INDEX chem_samples_taken ON chem_samples (loop, taken_at);
CREATE TRIGGER chem_samples_no_update BEFORE UPDATE ON chem_samples
BEGIN SELECT RAISE(ABORT, 'water chemistry samples are append-only'); END;
CREATE TRIGGER chem_samples_no_delete BEFORE DELETE ON chem_samples
BEGIN SELECT RAISE(ABORT, 'water chemistry samples are append-only'); END;
