-- The one ledger of holds: see sqlite/0003_ledger.sql.
CREATE TABLE ledger_holds (
  node        TEXT COLLATE "C" NOT NULL,
  owner       TEXT COLLATE "C" NOT NULL,
  kind        TEXT NOT NULL,
  domain      TEXT NOT NULL DEFAULT '',
  reservation TEXT NOT NULL DEFAULT '',
  reason      TEXT NOT NULL,
  since       BIGINT NOT NULL,
  placed_by   TEXT NOT NULL,
  event       BIGINT NOT NULL,
  PRIMARY KEY (node, owner)
);
INSERT INTO ledger_holds (node, owner, kind, reason, since, placed_by, event)
  SELECT node, k || ':' || CASE WHEN owner = 'lifecycle' THEN 'lifecycle' ELSE substr(owner, strpos(owner, ':') + 1) END, k, reason, since, owner, event
  FROM (SELECT node, owner, reason, since, event,
          CASE kind WHEN 'facility-alarm' THEN 'facility' WHEN 'burn-in' THEN 'burnin' ELSE kind END AS k FROM holds) old;
DROP TABLE holds;
ALTER TABLE ledger_holds RENAME TO holds;
ALTER TABLE holds RENAME CONSTRAINT ledger_holds_pkey TO holds_pkey;
CREATE INDEX holds_owner ON holds (owner);

CREATE TABLE ledger_nodes (
  node   TEXT COLLATE "C" PRIMARY KEY,
  record TEXT NOT NULL
);

CREATE TABLE ledger_fence (
  id     INTEGER PRIMARY KEY CHECK (id = 1),
  epoch  BIGINT NOT NULL,
  leader TEXT NOT NULL
);

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'seam_read') THEN
    GRANT SELECT ON holds, ledger_nodes, ledger_fence TO seam_read;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'seam_write') THEN
    GRANT SELECT, INSERT, UPDATE, DELETE ON holds, ledger_nodes, ledger_fence TO seam_write;
  END IF;
END $$;
