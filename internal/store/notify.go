package store

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentik/agentik/internal/agent"
)

// catchUpPage is how many stored events one catch-up query reads, so a
// long outage is published in bounded pieces rather than in one slice.
const catchUpPage = 1000

// listenIdle is how long the listener waits for a notification before it
// checks its connection and catches up anyway. A half-open TCP connection
// would otherwise hide other instances' events until the kernel gives up
// on it; a catch-up that finds nothing costs one indexed query.
const listenIdle = 30 * time.Second

// listenPing bounds that check (and closing the listener's connection).
const listenPing = 10 * time.Second

// Backoff between attempts to get the listener's connection back.
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 10 * time.Second
)

// listenerApp is the application_name of the listener's connection, so
// pg_stat_activity shows what it is.
const listenerApp = "agentik-listener"

// notifyChannel is the NOTIFY channel of the database with that epoch.
// NOTIFY is per database, not per schema: naming the channel after the
// epoch (made per schema) keeps deployments that share a database in
// different schemas from waking each other.
func notifyChannel(epoch string) string { return "agentik_events_" + epoch }

// notice is the payload of a commit's notification: the highest seq it
// committed and the instance that committed it.
func notice(seq int64, instance string) string {
	return strconv.FormatInt(seq, 10) + " " + instance
}

// parseNotice reads a notice.
func parseNotice(payload string) (seq int64, instance string, ok bool) {
	n, instance, ok := strings.Cut(payload, " ")
	if !ok {
		return 0, "", false
	}
	seq, err := strconv.ParseInt(n, 10, 64)
	return seq, instance, err == nil
}

// interruptPrefix starts the payload of an interrupt request: "interrupt
// <owner instance> <conversation id>".
const interruptPrefix = "interrupt "

func parseInterrupt(payload string) (owner, conversationID string, ok bool) {
	rest, ok := strings.CutPrefix(payload, interruptPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, " ")
}

// handoverPrefix starts the payload of a handover: "handover <instance>",
// sent by an instance that stops and released its turns (Handover).
const handoverPrefix = "handover "

// Handover releases the running turns this Store owns, on PostgreSQL,
// and tells the other instances, so that one of them continues them at
// once (its Recover claims a turn with no owner) instead of after its
// recovery tick notices this instance is gone. The caller calls it after
// it stopped its turns (agent.Runner.Close: a graceful stop's drain ran
// out), before it closes the Store. On SQLite it does nothing: the next
// start takes every turn.
func (s *Store) Handover(ctx context.Context) error {
	if !s.postgres {
		return nil
	}
	res := s.w.WithContext(ctx).Model(&conversationRow{}).
		Where("running = ? AND turn_owner = ?", true, s.instance).
		UpdateColumn("turn_owner", "") // not a change users see: updated_at stays
	if res.Error != nil {
		return fmt.Errorf("store: hand over turns: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return nil
	}
	if err := s.w.WithContext(ctx).Exec("SELECT pg_notify(?, ?)", s.channel, handoverPrefix+s.instance).Error; err != nil {
		return fmt.Errorf("store: hand over turns: %w", err)
	}
	return nil
}

// OnHandover sets what the listener calls (from its goroutine: it must
// not block) when another instance handed its turns over; PostgreSQL
// only.
func (s *Store) OnHandover(f func()) { s.onHand.Store(&f) }

// broadcastPrefix starts the payload of a message to the other
// instances: "told <topic> <instance> <body>" (Broadcast).
const broadcastPrefix = "told "

// maxBroadcast bounds a Broadcast's payload below PostgreSQL's 8000 bytes
// a notification.
const maxBroadcast = 7000

// Broadcast hands body to the OnBroadcast func of topic on each of the
// other instances sharing the database (PostgreSQL), and reports whether
// it sent it: on SQLite there are none, and it does nothing. Delivery is
// NOTIFY's: once, to the instances listening now, nothing kept. topic is
// one word.
func (s *Store) Broadcast(ctx context.Context, topic, body string) (bool, error) {
	if topic == "" || strings.ContainsAny(topic, " \x00") {
		return false, fmt.Errorf("store: broadcast: topic %q is not one word", topic)
	}
	if !s.postgres || s.channel == "" {
		return false, nil
	}
	payload := broadcastPrefix + topic + " " + s.instance + " " + body
	if len(payload) > maxBroadcast || !textOK(payload) {
		return false, fmt.Errorf("store: broadcast %s: %d bytes, at most %d of text", topic, len(payload), maxBroadcast)
	}
	if err := s.w.WithContext(ctx).Exec("SELECT pg_notify(?, ?)", s.channel, payload).Error; err != nil {
		return false, fmt.Errorf("store: broadcast %s: %w", topic, err)
	}
	return true, nil
}

// OnBroadcast sets what the listener calls, on PostgreSQL, with the body
// of another instance's Broadcast of topic (one func a topic, the last
// set). It is called on the listener's goroutine and must not block.
func (s *Store) OnBroadcast(topic string, f func(body string)) { s.onTold.Store(topic, f) }

// told hands a broadcast's payload (after broadcastPrefix) to its
// topic's func, unless this instance sent it.
func (s *Store) told(rest string) {
	topic, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return
	}
	from, body, ok := strings.Cut(rest, " ")
	if !ok || from == s.instance {
		return
	}
	if f, ok := s.onTold.Load(topic); ok {
		f.(func(string))(body)
	}
}

// RequestInterrupt asks the instance running the conversation's turn to
// interrupt it, and reports whether a turn runs there. On SQLite one
// process runs every turn, so there is no other instance to ask.
func (s *Store) RequestInterrupt(ctx context.Context, conversationID string) (bool, error) {
	if !textOK(conversationID) {
		return false, missing("conversation", conversationID)
	}
	var r conversationRow
	if err := s.r.WithContext(ctx).Select("running", "turn_owner").Take(&r, "id = ?", conversationID).Error; err != nil {
		return false, notFound(err, "conversation", conversationID)
	}
	if !r.Running || !s.postgres || r.TurnOwner == "" || r.TurnOwner == s.instance {
		return false, nil
	}
	payload := interruptPrefix + r.TurnOwner + " " + conversationID
	if err := s.w.WithContext(ctx).Exec("SELECT pg_notify(?, ?)", s.channel, payload).Error; err != nil {
		return false, fmt.Errorf("store: request interrupt: %w", err)
	}
	return true, nil
}

// catchUp hands to Options.Publish, in seq order and exactly once, the
// committed events above s.published, the highest seq published so far.
// It is the only caller of Publish, so Publish never sees a lower seq after
// a higher one (the broker relies on it).
//
// upTo is a seq known to be committed; if it is published already,
// catchUp returns at once. own are the events the writer just committed,
// in seq order and contiguous (the writer held the seq lock); catchUp reads
// the events below them that other instances committed (all of them are
// visible: they committed before this writer got the lock) and publishes
// own from memory. Without own (a notification, a reconnect) it publishes
// every committed event it can read: a later notification then costs
// nothing. Reading more than upTo is safe because seqs become visible in
// order (seqLock), so a read sees a prefix of the log, never a gap that
// fills later.
//
// On a read error it publishes nothing more and leaves s.published where
// it is: a later catch-up (the next commit, notification or reconnect)
// publishes the rest, late but in order and without loss.
func (s *Store) catchUp(ctx context.Context, upTo int64, own []agent.Encoded) error {
	err := s.publishUpTo(ctx, upTo, own)
	s.relaySend(own) // the writer's commit, to the other instances (relay.go)
	return err
}

// publishUpTo is catchUp without sending own to the relay: the relay's
// frames (own of another instance's commit) come here too.
func (s *Store) publishUpTo(ctx context.Context, upTo int64, own []agent.Encoded) error {
	// Every commit of this writer, and every notification of another's,
	// comes here: cached reads are stale from now on (see Version).
	s.version.Add(1)
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if s.publish == nil || upTo <= s.published {
		return nil
	}
	before := int64(math.MaxInt64)
	if len(own) > 0 {
		before = own[0].Seq
	}
	for s.published < before-1 {
		evs, err := s.stored(ctx, s.published, before, catchUpPage)
		if err != nil {
			return fmt.Errorf("catch up after %d: %w", s.published, err)
		}
		s.hand(evs)
		if len(evs) < catchUpPage {
			break // the rest of the gap was pruned, or nothing more is committed
		}
	}
	for i, ev := range own {
		if ev.Seq > s.published {
			s.hand(own[i:])
			break
		}
	}
	return nil
}

// hand publishes evs (in seq order, above s.published). s.pubMu is held.
func (s *Store) hand(evs []agent.Encoded) {
	if len(evs) == 0 {
		return
	}
	s.publish(evs)
	s.published = evs[len(evs)-1].Seq
}

// listener is the goroutine that follows the other instances' commits on
// PostgreSQL: it owns conn (LISTENing on s.channel), catches up on every
// notification, and gets a new connection with backoff when it is lost.
// It returns when ctx ends.
func (s *Store) listener(ctx context.Context, conn *pgx.Conn) {
	defer close(s.listenDone)
	if s.relay != nil { // EXPERIMENTAL (relay.go)
		done := make(chan struct{})
		go func() { defer close(done); s.runRelay(ctx) }()
		defer func() { <-done; s.lateWG.Wait() }()
	}
	backoff := listenBackoffMin
	for {
		err := s.follow(ctx, conn)
		closeConn(ctx, conn)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("event_listener_lost", "err", err, "published", s.publishedSeq())
		for {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, listenBackoffMax)
			if conn, err = s.dialListener(ctx); err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("event_listener_connect", "err", err, "retry_in", backoff)
		}
		backoff = listenBackoffMin
		s.log.Info("event_listener_reconnected", "catch_up_after", s.publishedSeq())
		if f := s.onProject.Load(); f != nil {
			(*f)("") // a project's change may have been missed while away
		}
		if f := s.onSite.Load(); f != nil {
			(*f)() // so may a change of the admin panel's settings (site.go)
		}
	}
}

// follow catches up on everything committed (what happened before conn
// was listening included), then once per notification. It returns the
// error that ended it: conn lost, a failed catch-up, or ctx's end.
func (s *Store) follow(ctx context.Context, conn *pgx.Conn) error {
	if err := s.catchUp(ctx, math.MaxInt64, nil); err != nil {
		return err
	}
	for {
		wait, cancel := context.WithTimeout(ctx, listenIdle)
		n, err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && pgconn.Timeout(err):
			// Idle: check the connection, and catch up in case a
			// notification was ever missed.
			ping, cancel := context.WithTimeout(ctx, listenPing)
			err = conn.Ping(ping)
			cancel()
			if err != nil {
				return fmt.Errorf("ping: %w", err)
			}
			if err := s.catchUp(ctx, math.MaxInt64, nil); err != nil {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("wait for notification: %w", err)
		}
		if from, ok := strings.CutPrefix(n.Payload, handoverPrefix); ok {
			if f := s.onHand.Load(); f != nil && from != s.instance {
				(*f)()
			}
			continue
		}
		if rest, ok := strings.CutPrefix(n.Payload, broadcastPrefix); ok {
			s.told(rest)
			continue
		}
		if from, ok := parseSiteNotice(n.Payload); ok { // site.go
			if f := s.onSite.Load(); f != nil && from != s.instance {
				(*f)()
			}
			continue
		}
		if from, id, ok := parseProjectNotice(n.Payload); ok { // project.go
			if f := s.onProject.Load(); f != nil && from != s.instance {
				(*f)(id)
			}
			continue
		}
		if owner, conv, ok := parseInterrupt(n.Payload); ok {
			if owner == s.instance && s.onIntr != nil {
				s.onIntr(conv)
			}
			continue
		}
		seq, from, ok := parseNotice(n.Payload)
		if ok && from == s.instance {
			// This instance's own commit: its writer publishes it (and
			// the other instances' events below it) itself.
			continue
		}
		if !ok {
			// Not ours, or a newer format: catching up is always right.
			seq = math.MaxInt64
		} else if s.relay != nil {
			// The relay brings the events; the log only if it is late.
			s.relayLate(ctx, seq)
			continue
		}
		if err := s.catchUp(ctx, seq, nil); err != nil {
			return err
		}
	}
}

// dialListener opens the listener's own connection (LISTEN needs a session
// of its own, outside the pool) and LISTENs on s.channel.
func (s *Store) dialListener(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(s.dsn)
	if err != nil {
		return nil, fmt.Errorf("listener: %w", err)
	}
	cfg.RuntimeParams["application_name"] = listenerApp
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("listener: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		closeConn(ctx, conn)
		return nil, fmt.Errorf("listener: listen: %w", err)
	}
	// Holding this lock for the connection's life tells other instances
	// this one is alive and its running turns are not orphaned.
	ns, key := ownerLock(s.instance)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", ns, key); err != nil {
		closeConn(ctx, conn)
		return nil, fmt.Errorf("listener: owner lock: %w", err)
	}
	s.listenPID.Store(conn.PgConn().PID())
	return conn, nil
}

// closeConn closes conn, waiting at most listenPing for the server.
func closeConn(ctx context.Context, conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listenPing)
	defer cancel()
	_ = conn.Close(ctx) // the connection is gone either way
}

// publishedSeq is the highest seq published so far.
func (s *Store) publishedSeq() int64 {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	return s.published
}
