-- The history as a hash chain, sealed by its writers (chain.go): each
-- event's hash covers the one before it and every column of its own but
-- seq (its place is the chain's order), and each write ends with a seal,
-- a statement signed by the writer's SSH key over the newest event's
-- hash. Events written before this version carry no hash: the chain
-- runs through them all the same, and the first seal after the upgrade
-- covers them. postgres/0004_chain.sql is the same for PostgreSQL.
ALTER TABLE events ADD COLUMN hash TEXT NOT NULL DEFAULT '';

-- one row per write that added events: head is the newest event it
-- seals; statement and signature as for events ("" for a database
-- role's write, which no key seals)
CREATE TABLE seals (
  head      BIGINT PRIMARY KEY,
  at        BIGINT NOT NULL,
  actor     TEXT NOT NULL,
  statement TEXT NOT NULL,
  signature TEXT NOT NULL
);
CREATE TRIGGER seals_no_update BEFORE UPDATE ON seals
  BEGIN SELECT RAISE(ABORT, 'lifecycle seals are append-only'); END;
CREATE TRIGGER seals_no_delete BEFORE DELETE ON seals
  BEGIN SELECT RAISE(ABORT, 'lifecycle seals are append-only'); END;

-- RFC 3161 time-stamps of seals, from the authority the access policy
-- names: token is the TimeStampToken (DER, base64) over the seal's
-- statement, at the authority's time
CREATE TABLE stamps (
  head  BIGINT PRIMARY KEY,
  at    BIGINT NOT NULL,
  token TEXT NOT NULL
);
CREATE TRIGGER stamps_no_update BEFORE UPDATE ON stamps
  BEGIN SELECT RAISE(ABORT, 'lifecycle time-stamps are append-only'); END;
CREATE TRIGGER stamps_no_delete BEFORE DELETE ON stamps
  BEGIN SELECT RAISE(ABORT, 'lifecycle time-stamps are append-only'); END;
