package eventlog

import (
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentik/agentik/internal/agent"
)

// RetryAttempts bounds how often the writer runs one transaction that
// keeps failing with a transient error: with the store's default backoff
// (50 ms) the last attempt starts 750 ms after the first, long enough for
// a pool to reconnect after its backends were killed or PostgreSQL
// restarted, short enough that a turn's writes are not held up for long.
const RetryAttempts = 5

// Retry runs f, and runs it again (again true) after a backoff, from wait
// and doubling, while it fails with a Transient error, at most
// RetryAttempts times in all. It sleeps on the caller's goroutine: the
// writer's own pace, since every append waits for the database anyway.
func Retry[T any](wait time.Duration, log *slog.Logger, f func(again bool) (T, error)) (T, error) {
	v, err := f(false)
	for attempt := 2; attempt <= RetryAttempts && Transient(err); attempt++ {
		log.Warn("store_retry", "err", err, "attempt", attempt, "wait", wait)
		time.Sleep(wait)
		wait *= 2
		v, err = f(true)
	}
	return v, err
}

// Transient reports whether err is one a transaction may fail with and
// then succeed on a second try: a serialization failure or deadlock, an
// administrator or crash shutdown of the backend (a killed connection, a
// restarting server), any connection failure. Constraint violations, bad
// data and agentik's own refusals are not: they fail the same way again.
func Transient(err error) bool {
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
