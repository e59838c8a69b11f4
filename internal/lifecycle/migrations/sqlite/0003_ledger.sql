-- The one ledger of holds (internal/ledger): a hold is an owner's,
-- kind:name in one vocabulary (facility, burnin, maintenance, rma,
-- firmware, person), the same name as in Slurm's reason, Kubernetes'
-- taint and --owner; who placed it is kept apart (placed_by). The
-- holds of 0001 move over: facility-alarm is facility, burn-in is
-- burnin; the state machine's are maintenance:lifecycle and
-- rma:lifecycle; a person's owner is the kind and the principal that
-- set it (person:operator). postgres/0003_ledger.sql is the same for
-- PostgreSQL.
CREATE TABLE ledger_holds (
  node        TEXT NOT NULL,
  owner       TEXT NOT NULL,
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
  SELECT node, k || ':' || CASE WHEN owner = 'lifecycle' THEN 'lifecycle' ELSE substr(owner, instr(owner, ':') + 1) END, k, reason, since, owner, event
  FROM (SELECT node, owner, reason, since, event,
          CASE kind WHEN 'facility-alarm' THEN 'facility' WHEN 'burn-in' THEN 'burnin' ELSE kind END AS k FROM holds);
DROP TABLE holds;
ALTER TABLE ledger_holds RENAME TO holds;
CREATE INDEX holds_owner ON holds (owner);

-- what the ledger knows of each node's scheduler state (whether seam
-- drained it, with which reason; whose drain or undrain it leaves
-- alone), by the node's scheduler name: operational, not history
CREATE TABLE ledger_nodes (
  node   TEXT PRIMARY KEY,
  record TEXT NOT NULL
);

-- the newest epoch that wrote the ledger (facilityd's leader on
-- Kubernetes): a writer with an older one is refused
CREATE TABLE ledger_fence (
  id     INTEGER PRIMARY KEY CHECK (id = 1),
  epoch  BIGINT NOT NULL,
  leader TEXT NOT NULL
);
