package eventlog

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ListenIdle is how long the listener waits for a notification before it
// checks its connection and catches up anyway. A half-open TCP connection
// would otherwise hide other instances' events until the kernel gives up
// on it; a catch-up that finds nothing costs one indexed query.
const ListenIdle = 30 * time.Second

// ListenPing bounds that check (and closing the listener's connection).
const ListenPing = 10 * time.Second

// Backoff between attempts to get the listener's connection back.
const (
	ListenBackoffMin = 100 * time.Millisecond
	ListenBackoffMax = 10 * time.Second
)

// Listener follows the other instances' commits on PostgreSQL: on a
// connection of its own (LISTEN needs a session outside the pool) it
// LISTENs on Channel, catches up on every notification (Notice), and gets
// a new connection with backoff when it is lost, catching up on whatever
// it missed meanwhile.
type Listener struct {
	DSN     string // the database's
	Channel string // the NOTIFY channel
	App     string // the connection's application_name (pg_stat_activity)
	// Hold runs on each new connection once it LISTENs (the store holds
	// its instance's lock for the connection's life there).
	Hold func(ctx context.Context, conn *pgx.Conn) error
	// CatchUp publishes everything committed: on each connection before
	// its first notification, and when the connection was idle ListenIdle.
	CatchUp func(ctx context.Context) error
	// Notice handles one notification's payload; an error drops the
	// connection (and so catches up again on the next).
	Notice func(ctx context.Context, payload string) error
	// Reconnected runs once a lost connection is back (nil: nothing).
	Reconnected func()
	// Published is the seq published so far, for the log.
	Published func() int64
	Log       *slog.Logger
}

// Dial opens the listener's own connection and LISTENs on l.Channel.
func (l *Listener) Dial(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(l.DSN)
	if err != nil {
		return nil, fmt.Errorf("listener: %w", err)
	}
	cfg.RuntimeParams["application_name"] = l.App
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("listener: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.Channel}.Sanitize()); err != nil {
		closeConn(ctx, conn)
		return nil, fmt.Errorf("listener: listen: %w", err)
	}
	if l.Hold != nil {
		if err := l.Hold(ctx, conn); err != nil {
			closeConn(ctx, conn)
			return nil, fmt.Errorf("listener: %w", err)
		}
	}
	return conn, nil
}

// Run owns conn (from Dial) and follows the notifications until ctx ends.
func (l *Listener) Run(ctx context.Context, conn *pgx.Conn) {
	backoff := ListenBackoffMin
	for {
		err := l.follow(ctx, conn)
		closeConn(ctx, conn)
		if ctx.Err() != nil {
			return
		}
		l.Log.Warn("event_listener_lost", "err", err, "published", l.Published())
		for {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, ListenBackoffMax)
			if conn, err = l.Dial(ctx); err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			l.Log.Warn("event_listener_connect", "err", err, "retry_in", backoff)
		}
		backoff = ListenBackoffMin
		l.Log.Info("event_listener_reconnected", "catch_up_after", l.Published())
		if l.Reconnected != nil {
			l.Reconnected()
		}
	}
}

// follow catches up on everything committed (what happened before conn
// was listening included), then once per notification. It returns the
// error that ended it: conn lost, a failed catch-up, or ctx's end.
func (l *Listener) follow(ctx context.Context, conn *pgx.Conn) error {
	if err := l.CatchUp(ctx); err != nil {
		return err
	}
	for {
		wait, cancel := context.WithTimeout(ctx, ListenIdle)
		n, err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && pgconn.Timeout(err):
			// Idle: check the connection, and catch up in case a
			// notification was ever missed.
			ping, cancel := context.WithTimeout(ctx, ListenPing)
			err = conn.Ping(ping)
			cancel()
			if err != nil {
				return fmt.Errorf("ping: %w", err)
			}
			if err := l.CatchUp(ctx); err != nil {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("wait for notification: %w", err)
		}
		if err := l.Notice(ctx, n.Payload); err != nil {
			return err
		}
	}
}

// closeConn closes conn, waiting at most ListenPing for the server.
func closeConn(ctx context.Context, conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ListenPing)
	defer cancel()
	_ = conn.Close(ctx) // the connection is gone either way
}
