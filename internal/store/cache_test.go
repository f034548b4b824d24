package store

import (
	"database/sql"
	"strings"
	"testing"

	_ "github.com/glebarez/go-sqlite"  // the "sqlite" database/sql driver
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/agentik/agentik/internal/agent"
)

// TestReadCacheUntilNextCommit: on SQLite, Conversation and Bounds are
// answered from memory until the next commit (a change made behind the
// store's back, which agentik never does, shows that); every commit
// shows at once. On PostgreSQL, where other instances commit, nothing is
// kept.
func TestReadCacheUntilNextCommit(t *testing.T) {
	t.Parallel()
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			dsn := be.dsn(t)
			s := open(t, dsn, Options{Mode: ModeFast})
			ctx := t.Context()
			mustAppend(t, s, createdRec("c1", "a"))
			if c, err := s.Conversation(ctx, "c1"); err != nil || c.Title != "a" {
				t.Fatalf("Conversation = %+v, %v", c, err)
			}
			if _, head, err := s.Bounds(ctx); err != nil || head != 1 {
				t.Fatalf("Bounds head = %d, %v; want 1", head, err)
			}
			var raw *sql.DB
			var err error
			if be.name == "sqlite" {
				raw, err = sql.Open("sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite:")+"?_pragma=busy_timeout(5000)")
			} else {
				raw, err = sql.Open("pgx", dsn)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.ExecContext(ctx, "UPDATE conversation SET title = 'behind' WHERE id = 'c1'"); err != nil {
				t.Fatal(err)
			}
			want := "a" // kept
			if s.postgres {
				want = "behind"
			}
			if c, err := s.Conversation(ctx, "c1"); err != nil || c.Title != want {
				t.Fatalf("Conversation after a change behind the store: title %q, %v; want %q", c.Title, err, want)
			}
			mustAppend(t, s, renamedRec("c1", "b"), textRec("c1", " t"))
			if c, err := s.Conversation(ctx, "c1"); err != nil || c.Title != "b" {
				t.Fatalf("Conversation after a rename: title %q, %v; want b", c.Title, err)
			}
			if _, head, err := s.Bounds(ctx); err != nil || head != 3 {
				t.Fatalf("Bounds head after two appends = %d, %v; want 3", head, err)
			}
			mustAppend(t, s, deletedRec("c1"))
			if _, err := s.Conversation(ctx, "c1"); err == nil {
				t.Fatal("a deleted conversation is still found")
			}
		})
	}
}

// TestEncodedEventsOfAConversation: a query of one conversation's events,
// which reads each id from the payload and neither the kind nor the
// conversation from the row, gives what the query of all events gives for
// them.
func TestEncodedEventsOfAConversation(t *testing.T) {
	t.Parallel()
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			s := open(t, be.dsn(t), Options{})
			ctx := t.Context()
			mustAppend(t, s, createdRec("c1", "a"), createdRec("c2", "b"))
			mustAppend(t, s, textRec("c1", " one"), userRec("c1", `say "hi" \ there`, "k1"), textRec("c2", " other"), renamedRec("c1", "x"), textRec("c1", " two"))
			all, err := s.EncodedEvents(ctx, agent.EventQuery{})
			if err != nil {
				t.Fatal(err)
			}
			var want []agent.Encoded
			for _, e := range all {
				if e.Kind == agent.KindConversation && e.ConversationID == "c1" {
					want = append(want, e)
				}
			}
			for _, limit := range []int{0, 2} {
				var got []agent.Encoded
				for after := int64(0); ; {
					page, err := s.EncodedEvents(ctx, agent.EventQuery{After: after, ConversationID: "c1", Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, page...)
					if limit == 0 || len(page) == 0 {
						break
					}
					after = page[len(page)-1].Seq
				}
				if len(got) != 3 || len(got) != len(want) {
					t.Fatalf("limit %d: %d events, want 3 (%d in the whole log)", limit, len(got), len(want))
				}
				for i := range got {
					g, w := got[i], want[i]
					if g.Seq != w.Seq || g.ID != w.ID || g.ID == "" || g.Kind != w.Kind || g.ConversationID != w.ConversationID || g.Type != w.Type || string(g.JSON) != string(w.JSON) || string(g.Inner()) != string(w.Inner()) {
						t.Errorf("limit %d, event %d: %+v, want %+v", limit, i, g, w)
					}
				}
			}
		})
	}
}

func TestPayloadID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"type":"conversation","seq":3,"id":"abc","date":"d"}`:          "abc",
		`{"type":"conversation","seq":3,"id":"a\"b","date":"d"}`:         `a"b`,
		`{"type":"conversation","id":"late","seq":3,"event":{"id":"x"}}`: "late",
	} {
		if got, err := payloadID([]byte(in)); err != nil || got != want {
			t.Errorf("payloadID(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := payloadID([]byte(`not json`)); err == nil {
		t.Error("payloadID of bad JSON: no error")
	}
}
