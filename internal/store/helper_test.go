package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/agentik/agentik/internal/agent"
)

// postgresDSN is the test server (trust auth); each test gets its own schema.
const postgresDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// backend opens a fresh, empty store of one database kind.
type backend struct {
	name string
	// dsn returns a DSN of a new empty database that lives until the test ends.
	dsn func(t *testing.T) string
}

func backends(t *testing.T) []backend {
	bs := []backend{{name: "sqlite", dsn: func(t *testing.T) string {
		return "sqlite:" + filepath.Join(t.TempDir(), "agentik.db")
	}}}
	if os.Getenv("AGENTIK_TEST_NO_POSTGRES") == "1" {
		t.Log("AGENTIK_TEST_NO_POSTGRES=1: PostgreSQL not tested")
		return bs
	}
	return append(bs, backend{name: "postgres", dsn: func(t *testing.T) string { return postgresSchema(t) }})
}

// postgresSchema creates schema t_<random> and returns a DSN whose
// search_path is that schema; the schema is dropped when the test ends. An
// unreachable server fails the test (set AGENTIK_TEST_NO_POSTGRES=1 to skip
// PostgreSQL instead).
func postgresSchema(t testing.TB) string {
	t.Helper()
	db, err := gorm.Open(postgres.Open(postgresDSN), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("PostgreSQL at %s unreachable (set AGENTIK_TEST_NO_POSTGRES=1 to skip it): %v", postgresDSN, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	schema := "t_" + newID()
	if err := db.Exec("CREATE SCHEMA " + schema).Error; err != nil {
		_ = sqlDB.Close()
		t.Fatalf("PostgreSQL at %s: create schema (set AGENTIK_TEST_NO_POSTGRES=1 to skip it): %v", postgresDSN, err)
	}
	t.Cleanup(func() {
		if err := db.Exec("DROP SCHEMA " + schema + " CASCADE").Error; err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		_ = sqlDB.Close()
	})
	return postgresDSN + "&search_path=" + schema
}

// eachBackend runs f as a subtest on every backend.
func eachBackend(t *testing.T, f func(t *testing.T, dsn string)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { f(t, b.dsn(t)) })
	}
}

// recorder collects what the store publishes.
type recorder struct {
	mu   sync.Mutex
	evs  []agent.AllEvent
	grew chan struct{} // closed (and cleared) by the next publish
}

// next returns a channel closed by the next publish.
func (r *recorder) next() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.grew == nil {
		r.grew = make(chan struct{})
	}
	return r.grew
}

// publish decodes what subscribers would receive: the published bytes.
func (r *recorder) publish(evs []agent.Encoded) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range evs {
		var ev agent.AllEvent
		if err := json.Unmarshal(e.JSON, &ev); err != nil || ev.Seq != e.Seq || ev.Kind != e.Kind || ev.ConversationID != e.ConversationID || ev.EventType() != e.Type {
			panic(fmt.Sprintf("published %+v does not match its JSON %s (%v)", e, e.JSON, err))
		}
		r.evs = append(r.evs, ev)
	}
	if r.grew != nil {
		close(r.grew)
		r.grew = nil
	}
}

func (r *recorder) events() []agent.AllEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]agent.AllEvent(nil), r.evs...)
}

// clock is a settable agent.Clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// open opens dsn and closes it when the test ends.
func open(t *testing.T, dsn string, opt Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), dsn, opt)
	if err != nil {
		t.Fatalf("Open(%q): %v", dsn, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Record builders.

func createdRec(cid, title string) *agent.Record {
	return &agent.Record{
		Event:        agent.AllEvent{Kind: agent.KindAgent, ID: "ev-" + newID(), Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: cid, Title: title}},
		Conversation: &agent.Conversation{ID: cid, Title: title},
	}
}

func renamedRec(cid, title string) *agent.Record {
	return &agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: "ev-" + newID(), Agent: &agent.AgentEvent{Type: agent.AgentRenamed, ConversationID: cid, Title: title}}}
}

func deletedRec(cid string) *agent.Record {
	return &agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: "ev-" + newID(), Agent: &agent.AgentEvent{Type: agent.AgentDeleted, ConversationID: cid}}}
}

func convRec(cid string, e *agent.Event) *agent.Record {
	return &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), ConversationID: cid, Event: e}}
}

func textRec(cid, text string) *agent.Record {
	return convRec(cid, &agent.Event{Type: agent.EventAppendText, Text: text})
}

func userRec(cid, text, clientID string) *agent.Record {
	return convRec(cid, &agent.Event{Type: agent.EventMessage, Message: &agent.Message{
		Type: agent.MessageUser, ID: "msg-" + newID(), ConversationID: cid,
		Content: []agent.Content{agent.Text(text)}, ClientID: clientID,
	}})
}

func mustAppend(t *testing.T, s *Store, recs ...*agent.Record) {
	t.Helper()
	if err := s.Append(t.Context(), recs...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

// allEvents reads the whole log.
func allEvents(t *testing.T, s *Store) []agent.AllEvent {
	t.Helper()
	evs, err := s.Events(t.Context(), agent.EventQuery{})
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	return evs
}

func seqs(evs []agent.AllEvent) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := agent.ErrorCode(err); err == nil || got != code {
		t.Fatalf("error = %v (code %s), want code %s", err, got, code)
	}
}
