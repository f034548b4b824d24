package eventlog

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// TestTransient: which database errors the writer retries.
func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "40001"}, true}, // serialization_failure
		{&pgconn.PgError{Code: "40P01"}, true}, // deadlock_detected
		{&pgconn.PgError{Code: "57P01"}, true}, // admin_shutdown
		{&pgconn.PgError{Code: "57P02"}, true}, // crash_shutdown
		{&pgconn.PgError{Code: "57P03"}, true}, // cannot_connect_now
		{&pgconn.PgError{Code: "08006"}, true}, // connection_failure
		{fmt.Errorf("insert events: %w", &pgconn.PgError{Code: "08000"}), true},
		{io.ErrUnexpectedEOF, true},
		{&net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{&pgconn.PgError{Code: "23505"}, false}, // unique_violation
		{&pgconn.PgError{Code: "22021"}, false}, // bad encoding
		{agent.Errorf(agent.CodeBadRequest, "client_id reused"), false},
		{gorm.ErrDuplicatedKey, false},
		{nil, false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestRetry: a transient failure is run again, the runs after the first
// told so, at most RetryAttempts in all; another error is not.
func TestRetry(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{{io.ErrUnexpectedEOF, RetryAttempts}, {errors.New("unique"), 1}, {nil, 1}} {
		runs, agains := 0, 0
		_, err := Retry(0, slog.New(slog.DiscardHandler), func(again bool) (int, error) {
			runs++
			if again {
				agains++
			}
			return runs, c.err
		})
		if runs != c.want || agains != runs-1 || !errors.Is(err, c.err) {
			t.Errorf("%v: %d runs (%d again), %v; want %d", c.err, runs, agains, err, c.want)
		}
	}
}
