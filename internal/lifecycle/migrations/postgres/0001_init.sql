-- The lifecycle store's first schema, PostgreSQL: the same tables,
-- columns and indexes as sqlite/0001_init.sql (TestSchemasAgree compares
-- them), plus what only PostgreSQL has: the roles seam_read and
-- seam_write, and a trigger that stamps every event with the session's
-- role and refuses an event that claims another database role. Times
-- are microseconds since the Unix epoch, UTC.

CREATE TABLE store_info (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  store_id   TEXT NOT NULL,
  site       TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE policies (
  version BIGINT PRIMARY KEY,
  at      BIGINT NOT NULL,
  actor   TEXT NOT NULL,
  event   BIGINT NOT NULL,
  doc     TEXT NOT NULL
);

CREATE TABLE elements (
  key     TEXT COLLATE "C" PRIMARY KEY,
  kind    TEXT NOT NULL,
  parent  TEXT COLLATE "C" NOT NULL,
  module  TEXT NOT NULL,
  slot    BIGINT NOT NULL,
  state   TEXT NOT NULL,
  since   BIGINT NOT NULL,
  last_at BIGINT NOT NULL,
  version BIGINT NOT NULL,
  serial  TEXT COLLATE "C" NOT NULL,
  record  TEXT NOT NULL,
  ord     BIGINT NOT NULL,
  attrs   TEXT NOT NULL
);
CREATE INDEX elements_parent ON elements (parent, slot);
CREATE INDEX elements_state ON elements (state, key);
CREATE UNIQUE INDEX elements_serial ON elements (serial) WHERE serial <> '';

CREATE TABLE names (
  name    TEXT COLLATE "C" PRIMARY KEY,
  element TEXT COLLATE "C" NOT NULL,
  system  TEXT NOT NULL
);
CREATE INDEX names_element ON names (element);

CREATE TABLE events (
  seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at          BIGINT NOT NULL,
  element     TEXT COLLATE "C" NOT NULL,
  kind        TEXT NOT NULL,
  prev_state  TEXT NOT NULL,
  state       TEXT NOT NULL,
  since       BIGINT NOT NULL,
  prev_serial TEXT COLLATE "C" NOT NULL,
  serial      TEXT COLLATE "C" NOT NULL,
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

CREATE FUNCTION seam_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'lifecycle events are append-only';
END $$;
CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION seam_events_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION seam_events_append_only();

-- every event records the session's role; one made as a database role
-- must be made by that role, whatever the client says
CREATE FUNCTION seam_events_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.db_user := session_user;
  IF NEW.actor LIKE 'db:%' AND NEW.actor <> 'db:' || session_user THEN
    RAISE EXCEPTION 'an event by % written by the database role %: a database role writes only as itself', NEW.actor, session_user
      USING ERRCODE = '42501';
  END IF;
  IF NEW.actor NOT LIKE 'db:%' AND NEW.signature = '' AND NEW.cause = 0 THEN
    RAISE EXCEPTION 'an event by % without its signature', NEW.actor USING ERRCODE = '42501';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER events_stamp BEFORE INSERT ON events
  FOR EACH ROW EXECUTE FUNCTION seam_events_stamp();

CREATE TABLE holds (
  node   TEXT COLLATE "C" NOT NULL,
  kind   TEXT NOT NULL,
  owner  TEXT NOT NULL,
  reason TEXT NOT NULL,
  since  BIGINT NOT NULL,
  event  BIGINT NOT NULL,
  PRIMARY KEY (node, kind, owner)
);

-- the team's roles: seam_read reads the store, seam_write changes it
-- (events only by appending); a member's own login role is granted one.
-- Roles belong to the whole server: they are made once, if the
-- migrating role may make roles at all.
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'seam_read') THEN
    BEGIN
      CREATE ROLE seam_read NOLOGIN;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE NOTICE 'cannot create the role seam_read: ask an administrator to create it';
    END;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'seam_write') THEN
    BEGIN
      CREATE ROLE seam_write NOLOGIN;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE NOTICE 'cannot create the role seam_write: ask an administrator to create it';
    END;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'seam_read') THEN
    GRANT USAGE ON SCHEMA public TO seam_read;
    GRANT SELECT ON store_info, policies, elements, names, events, holds, seam_schema TO seam_read;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'seam_write') THEN
    GRANT USAGE ON SCHEMA public TO seam_write;
    GRANT SELECT ON store_info, policies, elements, names, events, holds, seam_schema TO seam_write;
    GRANT INSERT ON events, policies TO seam_write;
    GRANT INSERT, UPDATE ON elements TO seam_write;
    GRANT INSERT, UPDATE, DELETE ON names, holds TO seam_write;
  END IF;
END $$;
