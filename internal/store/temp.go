package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// Temp conversations (a temporary chat, a stateless /v1 request) are the
// store's rows in a database of their own: OpenTemp's Store runs the same
// writer, rules and reads as a stored conversation's, over one private
// in-memory SQLite database, so every ability (queued sends, approvals,
// elicitations, branches, compaction) works for both and each rule is
// written once. What makes it temp is a property of that Store (its temp
// field), read where the two differ:
//
//   - no event is logged (no agent_event row, so nothing to redact on a
//     delete) and nothing is indexed for search;
//   - events are published with seq 0, and messages say seq 0 (their rows
//     keep the writer's counter, which orders them); a Quiet record is
//     applied and not published;
//   - the conversations are bounded in count and bytes (agent.TempConfig),
//     checked per Append and kept only when it commits, and Sweep drops
//     the idle ones;
//   - an Append runs in its caller's goroutine, one at a time: there is no
//     fsync to share, so nothing is gained by handing it to a writer
//     goroutine; reads share the writer's one connection.

var _ agent.TempStore = (*Store)(nil)

// TempOptions configures OpenTemp.
type TempOptions struct {
	// Config bounds the temp conversations; zero values take agent's
	// defaults.
	Config agent.TempConfig
	// Publish receives every applied event but a Quiet record's, with seq
	// 0, before the Append that applied it returns, in the order of the
	// Appends. It must not block. May be nil.
	Publish func(evs []agent.Encoded)
	// Now is the clock of dates and the idle sweep; time.Now when nil.
	Now agent.Clock
	// Logger receives gorm's error logs; discarded when nil.
	Logger *slog.Logger
	// Mode is Options.Mode: in ModePlain the database runs on
	// glebarez/go-sqlite instead of sqlitedrv.
	Mode Mode
}

// tempState is what a temp database's Store keeps beside its rows.
type tempState struct {
	cfg     agent.TempConfig
	publish func([]agent.Encoded)

	mu sync.Mutex // held by an Append: the one writer

	// known holds, per conversation, the facts (txFacts) of every
	// committed transaction: its writer is the only one, so what it wrote
	// last is what the rows say. facts is what the last transaction knew
	// when it committed, merged into known by keep. Both under mu.
	known map[string]convFacts
	facts txFacts

	hmu   sync.RWMutex // guards convs and bytes; written under mu too
	convs map[string]*tempConv
	bytes int64 // of all convs
}

// tempConv is one temp conversation's bookkeeping.
type tempConv struct {
	bytes      int64 // recordBytes of what it holds
	apiRequest bool  // agent.Conversation.APIRequest
}

// OpenTemp opens the store of temp conversations: an empty private
// in-memory SQLite database with the tables the rules write, on one
// sqlitedrv connection (glebarez's in plain mode) that the writer and the
// reads share. ctx bounds
// the migration.
func OpenTemp(ctx context.Context, opt TempOptions) (*Store, error) {
	cfg := opt.Config
	if cfg.Idle <= 0 {
		cfg.Idle = agent.TempIdleTimeout
	}
	if cfg.MaxCount <= 0 {
		cfg.MaxCount = agent.DefaultTempCount
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = agent.DefaultTempBytes
	}
	clock := opt.Now
	if clock == nil {
		clock = time.Now
	}
	s := &Store{
		log:       opt.Logger,
		pageB:     PageBytes,
		retryWait: RetryBackoff,
		ctx:       context.WithoutCancel(ctx),
		now:       func() time.Time { return clock().UTC().Truncate(time.Microsecond) },
		temp:      &tempState{cfg: cfg, publish: opt.Publish, convs: map[string]*tempConv{}, known: map[string]convFacts{}},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	mode, err := modeOf(opt.Mode)
	if err != nil {
		return nil, err
	}
	gcfg := &gorm.Config{TranslateError: true, SkipDefaultTransaction: true, NowFunc: s.now, Logger: gormLog{s.log}}
	w, err := eventlog.OpenSQLiteWriter("file:temp-"+agent.NewID()+"?mode=memory&_pragma=page_size(1024)&_pragma=foreign_keys(1)&_txlock=immediate", gcfg, mode == ModePlain)
	if err != nil {
		return nil, fmt.Errorf("store: open temp database: %w", err)
	}
	db, err := w.DB()
	if err != nil {
		return nil, fmt.Errorf("store: open temp database: %w", err)
	}
	// One connection, never closed: the database lives as long as it.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	s.w, s.r, s.rdb = w, w, db
	if err := w.WithContext(ctx).AutoMigrate(&conversationRow{}, &messageRow{}, &memoryRow{}, &queueRow{}, &pendingRow{}, &elicitRow{}); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: migrate temp database: %w", err)
	}
	// The conversation list's indexes serve the sidebar's pages of stored
	// conversations; a temp database's few are read whole, and every
	// message would rewrite their entries. A message's seq is the temp
	// writer's own counter: unique without an index.
	for _, idx := range []string{"idx_conversation_recent", "idx_conversation_list", "idx_conversation_owner_recent", "idx_conversation_owner_list", "idx_conversation_running", "idx_conversation_project", "idx_message_seq"} {
		if err := w.WithContext(ctx).Exec("DROP INDEX IF EXISTS " + idx).Error; err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("store: migrate temp database: %w", err)
		}
	}
	s.instance = agent.NewID()
	s.wr = eventlog.NewWriter(s.writerHooks()) // never started: Append writes (see above)
	s.wr.Configure(s.writerConfig(0))
	return s, nil
}

// Has reports whether id is a conversation of this temp database; it
// reads no row. Always false for a stored database.
func (s *Store) Has(id string) bool {
	t := s.temp
	if t == nil {
		return false
	}
	t.hmu.RLock()
	defer t.hmu.RUnlock()
	return t.convs[id] != nil
}

func (t *tempState) apiRequest(id string) bool {
	t.hmu.RLock()
	defer t.hmu.RUnlock()
	c := t.convs[id]
	return c != nil && c.apiRequest
}

// appendTemp is Append on a temp database: the bounds, then the writer's
// transaction in the caller's goroutine, then the bookkeeping and the
// events of what it committed.
func (s *Store) appendTemp(ctx context.Context, recs []*agent.Record) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: append: %w", err)
	}
	release, ok := s.wr.Hold() // Close waits for it
	if !ok {
		return agent.Errorf(agent.CodeUnavailable, "store: append: the store is closed")
	}
	defer release()
	t := s.temp
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.check(recs); err != nil {
		return err
	}
	var api map[string]bool // made only for a batch that creates an API request's conversation
	for _, rec := range recs {
		if c := rec.Conversation; c != nil && c.APIRequest {
			if api == nil {
				api = map[string]bool{}
			}
			api[rec.Event.ConversationID] = true
		}
	}
	r := eventlog.NewRequest(recs)
	evs, err := s.wr.Apply([]*request{r}, false)
	if err != nil {
		t.facts = nil
		for _, rec := range recs {
			setSeq(rec, 0)
		}
		return fmt.Errorf("store: append: %w", err)
	}
	t.keep(recs, api)
	t.facts = nil
	s.version.Add(1)
	if t.publish != nil && len(evs) > 0 {
		t.publish(evs)
	}
	return nil
}

// check refuses a batch that would pass a bound; t.mu is held. A batch
// that adds nothing is never refused: a turn can always end, a
// conversation always be deleted.
func (t *tempState) check(recs []*agent.Record) error {
	t.hmu.RLock()
	held, bytes := len(t.convs), t.bytes
	t.hmu.RUnlock()
	count, added := held, bytes
	for _, rec := range recs {
		if created(rec) {
			count++
		}
		added += recordBytes(rec)
	}
	if count > t.cfg.MaxCount && count > held {
		return agent.Errorf(agent.CodeUnavailable, "%d temp conversations are open, the most this server keeps; delete one or wait for idle ones to expire", held)
	}
	if added > t.cfg.MaxBytes && added > bytes {
		return agent.Errorf(agent.CodeUnavailable, "temp conversations hold %d bytes, and this would pass the %d this server keeps; delete some or wait for idle ones to expire", bytes, t.cfg.MaxBytes)
	}
	return nil
}

// seed gives a transaction's facts what committed ones knew of the
// conversations of batch; t.mu is held.
func (t *tempState) seed(facts txFacts, batch []*request) {
	for _, r := range batch {
		for _, rec := range r.Recs {
			cid := rec.Event.ConversationID
			if f, ok := t.known[cid]; ok && facts[cid] == nil {
				facts[cid] = &f
			}
		}
	}
}

// keep books what a committed batch holds; t.mu is held.
func (t *tempState) keep(recs []*agent.Record, api map[string]bool) {
	for cid, f := range t.facts {
		t.known[cid] = *f
	}
	t.hmu.Lock()
	defer t.hmu.Unlock()
	for _, rec := range recs {
		cid := rec.Event.ConversationID
		if created(rec) {
			t.convs[cid] = &tempConv{apiRequest: api[cid]}
		}
		c := t.convs[cid]
		if c == nil {
			continue
		}
		if a := rec.Event.Agent; a != nil && a.Type == agent.AgentDeleted {
			t.bytes -= c.bytes
			delete(t.convs, cid)
			delete(t.known, cid)
			continue
		}
		n := recordBytes(rec)
		c.bytes += n
		t.bytes += n
	}
}

func created(rec *agent.Record) bool {
	a := rec.Event.Agent
	return a != nil && a.Type == agent.AgentCreated && rec.Conversation != nil
}

// recordBytes is what a record adds to a temp conversation, roughly: its
// text and images.
func recordBytes(rec *agent.Record) int64 {
	var n int64
	if e := rec.Event.Event; e != nil && e.Type == agent.EventMessage && e.Message != nil {
		m := e.Message
		n += int64(len(m.Reasoning) + len(m.Arguments) + len(m.Result)) // not Error: a turn can always end
		for _, c := range m.Content {
			n += int64(len(c.Body) + len(c.Data))
		}
	}
	for _, mm := range rec.Memory {
		n += int64(len(mm.Reasoning))
		for _, c := range mm.Content {
			n += int64(len(c.Body) + len(c.Data))
		}
		for _, tc := range mm.ToolCalls {
			n += int64(len(tc.Arguments))
		}
	}
	return n
}

// Sweep deletes the temp conversations idle for longer than the idle
// timeout (and not running), publishing a deleted event for each. On a
// stored database it does nothing.
func (s *Store) Sweep(ctx context.Context) error {
	if s.temp == nil {
		return nil
	}
	now := s.now()
	rows, err := s.readRows(ctx, "SELECT id, updated_at FROM conversation WHERE running = ?", false)
	if err != nil {
		return fmt.Errorf("sweep temp conversations: %w", err)
	}
	var idle []string
	for rows.Next() {
		var id string
		var updated time.Time
		if err := rows.Scan(&id, &updated); err != nil {
			_ = rows.Close()
			return fmt.Errorf("sweep temp conversations: %w", err)
		}
		if now.Sub(updated) > s.temp.cfg.Idle {
			idle = append(idle, id)
		}
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("sweep temp conversations: %w", err)
	}
	for _, id := range idle {
		ev := agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), Date: now, ConversationID: id, Agent: &agent.AgentEvent{Type: agent.AgentDeleted, ConversationID: id}}
		if err := s.Append(ctx, &agent.Record{Event: ev}); err != nil && !errors.Is(err, agent.ErrNotFound) {
			return fmt.Errorf("sweep temp conversations: %w", err)
		}
	}
	return nil
}

// SweepEvery runs Sweep every interval (agent.TempSweepEvery when ≤ 0)
// until ctx ends. Its caller owns the goroutine it runs in.
func (s *Store) SweepEvery(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = agent.TempSweepEvery
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("temp_sweep_failed", "err", err)
			}
		}
	}
}
