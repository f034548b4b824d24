package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
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
// committed and the instance that committed it, then, after a newline,
// as many of its events evs (from the first, with their stored bytes)
// as fit in maxNotice bytes: another instance publishes those from the
// payload and reads from the log only what did not fit (notified). Each
// event is its seq and a space, then its id, kind, conversation id,
// owner and stored JSON, each its length in bytes, a colon and the
// bytes; all of them text (a NOTIFY payload is), as stored.
func notice(seq int64, instance string, evs []agent.Encoded) string {
	var b strings.Builder
	b.Grow(min(maxNotice, 64+eventsLen(evs)))
	b.WriteString(strconv.FormatInt(seq, 10))
	b.WriteByte(' ')
	b.WriteString(instance)
	for i, e := range evs {
		if i == 0 {
			if b.Len()+1+noticeLen(e) > maxNotice {
				break
			}
			b.WriteByte('\n')
		} else if b.Len()+noticeLen(e) > maxNotice {
			break
		}
		var n [20]byte
		b.Write(strconv.AppendInt(n[:0], e.Seq, 10))
		b.WriteByte(' ')
		for _, f := range [...]string{e.ID, e.Kind, e.ConversationID, e.Owner} {
			b.Write(strconv.AppendInt(n[:0], int64(len(f)), 10))
			b.WriteByte(':')
			b.WriteString(f)
		}
		b.Write(strconv.AppendInt(n[:0], int64(len(e.JSON)), 10))
		b.WriteByte(':')
		b.Write(e.JSON)
	}
	return b.String()
}

// maxNotice bounds a commit's notice below PostgreSQL's 8000 bytes a
// notification.
const maxNotice = 7800

// noticeLen is the length of e in a notice (its lengths at most 20
// digits each, with their separators).
func noticeLen(e agent.Encoded) int {
	return 6*21 + len(e.ID) + len(e.Kind) + len(e.ConversationID) + len(e.Owner) + len(e.JSON)
}

func eventsLen(evs []agent.Encoded) int {
	n := 0
	for _, e := range evs {
		n += noticeLen(e)
	}
	return n
}

// parseNotice reads a notice: its seq and instance, and the rest (the
// events it carries: noticeEvents).
func parseNotice(payload string) (seq int64, instance, events string, ok bool) {
	n, rest, ok := strings.Cut(payload, " ")
	if !ok {
		return 0, "", "", false
	}
	instance, events, _ = strings.Cut(rest, "\n")
	seq, err := strconv.ParseInt(n, 10, 64)
	return seq, instance, events, err == nil
}

// noticeEvents decodes the events of a notice (notice). A malformed one
// is an error: the caller reads the log instead.
func noticeEvents(s string) ([]agent.Encoded, error) {
	var out []agent.Encoded
	field := func() (string, bool) {
		n, rest, ok := strings.Cut(s, ":")
		l, err := strconv.Atoi(n)
		if !ok || err != nil || l < 0 || l > len(rest) {
			return "", false
		}
		f := rest[:l]
		s = rest[l:]
		return f, true
	}
	for s != "" {
		n, rest, ok := strings.Cut(s, " ")
		seq, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil {
			return nil, errNotice
		}
		s = rest
		var fs [5]string
		for i := range fs {
			if fs[i], ok = field(); !ok {
				return nil, errNotice
			}
		}
		e := agent.StoredEvent(seq, fs[0], fs[1], fs[2], []byte(fs[4]))
		e.Owner = fs[3]
		if len(out) > 0 && seq != out[len(out)-1].Seq+1 {
			return nil, errNotice // a commit's events are contiguous
		}
		out = append(out, e)
	}
	return out, nil
}

var errNotice = errors.New("store: malformed notice")

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

// OnOwnCommit sets what sees each batch this store's writer commits, and
// only those: on PostgreSQL the other instances' commits reach Start's
// publish and never f, so what f counts adds up across instances (the
// metrics: telemetry.Metrics.Committed). f runs on the writer's
// goroutine, right after the commit and before its events are published;
// it must not block, and must not keep evs. Set it before Start.
func (s *Store) OnOwnCommit(f func(evs []agent.Encoded)) { s.onOwn.Store(&f) }

// catchUp hands to Options.Publish, in seq order and exactly once, the
// committed events above the highest seq published so far, upTo known
// committed, own the events the writer just committed
// (eventlog.Publisher.UpTo, the only caller of Publish), and sends own to
// the other instances' relays.
func (s *Store) catchUp(ctx context.Context, upTo int64, own []agent.Encoded) error {
	if f := s.onOwn.Load(); f != nil && len(own) > 0 {
		(*f)(own)
	}
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
	return s.pub.UpTo(ctx, upTo, own)
}

// listener is the goroutine that follows the other instances' commits on
// PostgreSQL (eventlog.Listener, from s.listen's Dial): it owns conn and
// returns when ctx ends.
func (s *Store) listener(ctx context.Context, conn *pgx.Conn) {
	defer close(s.listenDone)
	if s.relay != nil { // EXPERIMENTAL (relay.go)
		done := make(chan struct{})
		go func() { defer close(done); s.runRelay(ctx) }()
		defer func() { <-done; s.lateWG.Wait() }()
	}
	s.listen.Run(ctx, conn)
}

// newListener is the store's listener: its connection holds the instance's
// owner lock, and its notifications are s.notified's.
func (s *Store) newListener() *eventlog.Listener {
	return &eventlog.Listener{
		DSN: s.dsn, Channel: s.channel, App: listenerApp, Log: s.log,
		Hold: func(ctx context.Context, conn *pgx.Conn) error {
			// Holding this lock for the connection's life tells other
			// instances this one is alive and its running turns are not
			// orphaned.
			ns, key := ownerLock(s.instance)
			if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", ns, key); err != nil {
				return fmt.Errorf("owner lock: %w", err)
			}
			s.listenPID.Store(conn.PgConn().PID())
			return nil
		},
		CatchUp:   func(ctx context.Context) error { return s.catchUp(ctx, math.MaxInt64, nil) },
		Notice:    s.notified,
		Published: s.pub.Published,
		Reconnected: func() {
			if f := s.onProject.Load(); f != nil {
				(*f)("") // a project's change may have been missed while away
			}
			if f := s.onSite.Load(); f != nil {
				(*f)() // so may a change of the admin panel's settings (site.go)
			}
		},
	}
}

// notified handles one notification on s.channel: another instance's
// handover, broadcast, change of the site's settings or of a project, an
// interrupt request, or a commit (caught up on).
func (s *Store) notified(ctx context.Context, payload string) error {
	if from, ok := strings.CutPrefix(payload, handoverPrefix); ok {
		if f := s.onHand.Load(); f != nil && from != s.instance {
			(*f)()
		}
		return nil
	}
	if rest, ok := strings.CutPrefix(payload, broadcastPrefix); ok {
		s.told(rest)
		return nil
	}
	if from, ok := parseSiteNotice(payload); ok { // site.go
		if f := s.onSite.Load(); f != nil && from != s.instance {
			(*f)()
		}
		return nil
	}
	if from, id, ok := parseProjectNotice(payload); ok { // project.go
		if f := s.onProject.Load(); f != nil && from != s.instance {
			(*f)(id)
		}
		return nil
	}
	if owner, conv, ok := parseInterrupt(payload); ok {
		if owner == s.instance && s.onIntr != nil {
			s.onIntr(conv)
		}
		return nil
	}
	seq, from, carried, ok := parseNotice(payload)
	if ok && from == s.instance {
		// This instance's own commit: its writer publishes it (and the
		// other instances' events below it) itself.
		return nil
	}
	if ok && carried != "" {
		// The commit's events, or the first of them: published from the
		// payload (the log read only below them, if this instance is
		// behind), the rest, if any, from the log.
		if evs, err := noticeEvents(carried); err == nil && len(evs) > 0 {
			if err := s.publishUpTo(ctx, evs[len(evs)-1].Seq, evs); err != nil || evs[len(evs)-1].Seq >= seq {
				return err
			}
		} else {
			s.log.Warn("event_notice_unread", "err", err, "through_seq", seq)
		}
	}
	if !ok {
		// Not ours, or a newer format: catching up is always right.
		seq = math.MaxInt64
	} else if s.relay != nil {
		// The relay brings the events; the log only if it is late.
		s.relayLate(ctx, seq)
		return nil
	}
	return s.catchUp(ctx, seq, nil)
}
