package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentik/agentik/internal/eventlog"
)

// leadApp is the application_name of a lead's connection (pg_stat_activity
// shows a standby's as waiting on an advisory lock).
const leadApp = "agentik-lead"

// ErrLeadLost ends a lead's context when the connection that held it
// was lost: another instance may lead from then on.
var ErrLeadLost = errors.New("store: lead lost")

// Lead waits until this instance leads name among the instances that
// share the database, and returns a context that ends when it no longer
// does, and the func that gives the lead up (call it once the work is
// done). Work that must run on one instance at a time, such as the
// deliverers of webhooks and A2A push notifications, runs under it.
//
// On PostgreSQL the lead is a session advisory lock (of the schema's
// epoch and name) on a connection of its own: a standby waits on the
// lock, so when the leader gives it up, stops or dies (its connection
// closes) one standby leads at once. The context ends with ErrLeadLost
// as its cause when that connection is lost. On SQLite one process has
// the database, and leads at once.
func (s *Store) Lead(ctx context.Context, name string) (context.Context, context.CancelFunc, error) {
	lctx, give, _, err := s.lead(ctx, name, true)
	return lctx, give, err
}

// TryLead is Lead without waiting: ok false (and nothing to give up)
// when another instance leads name now.
func (s *Store) TryLead(ctx context.Context, name string) (lctx context.Context, give context.CancelFunc, ok bool, err error) {
	return s.lead(ctx, name, false)
}

// lead is Lead, waiting for the lock or (wait false) trying it once.
func (s *Store) lead(ctx context.Context, name string, wait bool) (context.Context, context.CancelFunc, bool, error) {
	if !s.postgres {
		lctx, cancel := context.WithCancel(ctx)
		return lctx, cancel, true, nil
	}
	cfg, err := pgx.ParseConfig(s.dsn)
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: lead %s: %w", name, err)
	}
	cfg.RuntimeParams["application_name"] = leadApp
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: lead %s: connect: %w", name, err)
	}
	key, got := lockKey("lead "+name, s.epoch), true
	if wait {
		_, err = conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key)
	} else {
		err = conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&got)
	}
	if err != nil || !got {
		closeLead(conn)
		if err == nil {
			return nil, nil, false, nil
		}
		if ctx.Err() != nil {
			return nil, nil, false, ctx.Err()
		}
		return nil, nil, false, fmt.Errorf("store: lead %s: %w", name, err)
	}
	lctx, cancel := context.WithCancelCause(ctx)
	held := make(chan struct{})
	go func() {
		defer close(held)
		// No LISTEN on this connection: the wait ends only when lctx
		// does or the connection fails.
		if _, err := conn.WaitForNotification(lctx); lctx.Err() == nil {
			cancel(fmt.Errorf("%w: %v", ErrLeadLost, err))
		}
		closeLead(conn) // the lock goes with the session
	}()
	return lctx, func() { cancel(context.Canceled); <-held }, true, nil
}

// closeLead closes a lead's connection (its lock with it).
func closeLead(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), eventlog.ListenPing)
	defer cancel()
	_ = conn.Close(ctx)
}
