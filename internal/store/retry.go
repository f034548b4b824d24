package store

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentik/agentik/internal/agent"
)

// retryAttempts bounds how often the writer runs one transaction that
// keeps failing with a transient error: with the default RetryBackoff the
// last attempt starts 750 ms after the first, long enough for a pool to
// reconnect after its backends were killed or PostgreSQL restarted, short
// enough that a turn's writes are not held up for long.
const retryAttempts = 5

// RetryBackoff is the default wait before the writer's first retry of a
// transaction that failed with a transient error; it doubles on each
// further retry.
const RetryBackoff = 50 * time.Millisecond

// applyRetry is apply, run again (checked, after a backoff) while it fails
// with a transient error, at most retryAttempts times in all.
func (s *Store) applyRetry(batch []*request, checked bool) ([]agent.Encoded, error) {
	evs, err := s.apply(batch, checked)
	wait := s.retryWait
	for attempt := 2; attempt <= retryAttempts && transient(err); attempt++ {
		s.log.Warn("store_retry", "err", err, "attempt", attempt, "wait", wait)
		time.Sleep(wait) // the writer's own pace: every append waits for the database anyway
		wait *= 2
		evs, err = s.apply(batch, true)
	}
	return evs, err
}

// transient reports whether err is one a transaction may fail with and
// then succeed on a second try: a serialization failure or deadlock, an
// administrator or crash shutdown of the backend (a killed connection, a
// restarting server), any connection failure. Constraint violations, bad
// data and agentik's own refusals are not: they fail the same way again.
func transient(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*agent.Error](err); ok {
		return false
	}
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch pe.Code {
		case "40001", "40P01", "57P01", "57P02", "57P03":
			return true
		}
		return strings.HasPrefix(pe.Code, "08") // connection exception
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	for _, e := range []error{driver.ErrBadConn, io.EOF, io.ErrUnexpectedEOF, net.ErrClosed, syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.EPIPE} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
