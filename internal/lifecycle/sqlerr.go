package lifecycle

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// wrap turns an engine's error into one that says what happened to the
// store and what to do: locked, gone, no privilege. Others pass through
// with the store named.
func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	var already *StoreError
	var access *AccessError
	if errors.As(err, &already) || errors.As(err, &access) {
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return &StoreError{Store: s.name, Kind: StoreLocked, Err: fmt.Errorf("locked by another writer, waited for it in vain (%v): nothing was written; retry when it is done", se)}
		case 8: // SQLITE_READONLY
			return &StoreError{Store: s.name, Kind: StoreOpen, Err: fmt.Errorf("the file cannot be written (%v)", se)}
		case 10, 11, 26: // IOERR, CORRUPT, NOTADB
			return &StoreError{Store: s.name, Kind: StoreGone, Err: fmt.Errorf("the file cannot be read as a store (%v)", se)}
		}
		return fmt.Errorf("lifecycle store %s: %w", s.name, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "55P03": // lock_not_available (lock_timeout)
			return &StoreError{Store: s.name, Kind: StoreLocked, Err: fmt.Errorf("locked by another writer, waited for it in vain (%s): nothing was written; retry when it is done", pe.Message)}
		case pe.Code == "42501": // insufficient_privilege
			return &AccessError{Actor: "database role of this session", Action: "do this", Detail: fmt.Sprintf("%s: grant the role seam_write to write the store (seam_read to read it)", pe.Message)}
		case strings.HasPrefix(pe.Code, "57P"), strings.HasPrefix(pe.Code, "08"): // shutdown, connection
			return &StoreError{Store: s.name, Kind: StoreGone, Err: fmt.Errorf("the server went away (%s): a transaction in progress was rolled back, nothing of it was written", pe.Message)}
		}
		return fmt.Errorf("lifecycle store %s: %w", s.name, err)
	}
	if gone(err) {
		return &StoreError{Store: s.name, Kind: StoreGone, Err: fmt.Errorf("the connection to the server was lost (%v): a transaction in progress is rolled back by the server, nothing of it was written; retry when the server is back", err)}
	}
	return fmt.Errorf("lifecycle store %s: %w", s.name, err)
}

// gone reports an error of a connection that broke.
func gone(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.As(err, &ce), errors.Is(err, driver.ErrBadConn), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.As(err, &ne):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF") || strings.Contains(msg, "broken pipe")
}

// uniqueViolation reports a unique index refusing a row.
func uniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == 2067 || se.Code() == 1555 // SQLITE_CONSTRAINT_UNIQUE, _PRIMARYKEY
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
