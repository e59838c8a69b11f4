-- The lifecycle store's first schema, SQLite. postgres/0001_init.sql is
-- the same schema for PostgreSQL: the same tables, columns and indexes
-- (TestSchemasAgree compares them). Times are microseconds since the
-- Unix epoch, UTC.

-- the store's identity: one row, written by init
CREATE TABLE store_info (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  store_id   TEXT NOT NULL,
  site       TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

-- the access policy, every version of it
CREATE TABLE policies (
  version BIGINT PRIMARY KEY,
  at      BIGINT NOT NULL,
  actor   TEXT NOT NULL,
  event   BIGINT NOT NULL,
  doc     TEXT NOT NULL
);

-- every element of the inventory, as it is now: its state, since when,
-- its version (the count of its changes: a change prepared against
-- another version is a conflict), the serial in its slot, the as-built
-- record of a rack or tray (JSON), its place in a handover export
CREATE TABLE elements (
  key     TEXT PRIMARY KEY,
  kind    TEXT NOT NULL,
  parent  TEXT NOT NULL,
  module  TEXT NOT NULL,
  slot    BIGINT NOT NULL,
  state   TEXT NOT NULL,
  since   BIGINT NOT NULL,
  last_at BIGINT NOT NULL,
  version BIGINT NOT NULL,
  serial  TEXT NOT NULL,
  record  TEXT NOT NULL,
  ord     BIGINT NOT NULL,
  attrs   TEXT NOT NULL
);
CREATE INDEX elements_parent ON elements (parent, slot);
CREATE INDEX elements_state ON elements (state, key);
CREATE UNIQUE INDEX elements_serial ON elements (serial) WHERE serial <> '';

-- a node's names in Slurm, Kubernetes and its BMC
CREATE TABLE names (
  name    TEXT PRIMARY KEY,
  element TEXT NOT NULL,
  system  TEXT NOT NULL
);
CREATE INDEX names_element ON names (element);

-- the history: append-only. Each event carries the element's state,
-- since and serial after it, so that the state as of any time is one
-- row; cause is the event a cascade started from (0: itself)
CREATE TABLE events (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  at          BIGINT NOT NULL,
  element     TEXT NOT NULL,
  kind        TEXT NOT NULL,
  prev_state  TEXT NOT NULL,
  state       TEXT NOT NULL,
  since       BIGINT NOT NULL,
  prev_serial TEXT NOT NULL,
  serial      TEXT NOT NULL,
  actor       TEXT NOT NULL,
  db_user     TEXT NOT NULL,
  reason      TEXT NOT NULL,
  cause       BIGINT NOT NULL,
  policy      BIGINT NOT NULL,
  evidence    TEXT NOT NULL,
  statement   TEXT NOT NULL,
  signature   TEXT NOT NULL,
  data        TEXT NOT NULL
);
CREATE INDEX events_element ON events (element, at, seq);
CREATE INDEX events_serial ON events (serial, seq) WHERE serial <> '';
CREATE INDEX events_prev_serial ON events (prev_serial, seq) WHERE prev_serial <> '';
CREATE INDEX events_cause ON events (cause) WHERE cause <> 0;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'lifecycle events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'lifecycle events are append-only'); END;

-- the holds that keep nodes out of the pool, with their owners
CREATE TABLE holds (
  node   TEXT NOT NULL,
  kind   TEXT NOT NULL,
  owner  TEXT NOT NULL,
  reason TEXT NOT NULL,
  since  BIGINT NOT NULL,
  event  BIGINT NOT NULL,
  PRIMARY KEY (node, kind, owner)
);
