package store

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

func ownedRec(cid, title, owner string) *agent.Record {
	rec := createdRec(cid, title)
	rec.Conversation.Owner = owner
	return rec
}

// encodedRecorder keeps what the store publishes, as the broker gets it.
type encodedRecorder struct {
	mu  sync.Mutex
	evs []agent.Encoded
}

func (r *encodedRecorder) publish(evs []agent.Encoded) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, evs...)
}

func (r *encodedRecorder) owners() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string][]string{}
	for _, e := range r.evs {
		m[e.Owner] = append(m[e.Owner], e.Type)
	}
	return m
}

// Every event carries its conversation's owner, published and stored; a
// member's reads (replay of every stream, the list, search) hold only
// their own conversations.
func TestEventsAndReadsFollowTheOwner(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		rec := &encodedRecorder{}
		s := open(t, dsn, Options{Publish: rec.publish})
		mustAppend(t, s, ownedRec("ann-1", "apples of ann", "ann"), ownedRec("bob-1", "apples of bob", "bob"), createdRec("old-1", "apples of nobody"))
		mustAppend(t, s, textRec("ann-1", "a"), textRec("bob-1", "b"), textRec("old-1", "c"), assistantRec("bob-1", "more apples"), assistantRec("ann-1", "apples again"))
		mustAppend(t, s, deletedRec("bob-1"))

		got := rec.owners()
		want := map[string][]string{
			"ann":           {agent.AgentCreated, agent.EventAppendText, agent.EventMessage},
			"bob":           {agent.AgentCreated, agent.EventAppendText, agent.EventMessage, agent.AgentDeleted},
			agent.LocalUser: {agent.AgentCreated, agent.EventAppendText},
		}
		for o, types := range want {
			if !slices.Equal(got[o], types) {
				t.Errorf("published events of %s = %v, want %v", o, got[o], types)
			}
		}

		for _, q := range []agent.EventQuery{{Owner: "ann"}, {Owner: "ann", Limit: 100}, {Owner: "ann", AgentOnly: true}, {Owner: "ann", ConversationID: "ann-1"}, {Owner: "ann", ConversationID: "bob-1"}} {
			evs, err := s.EncodedEvents(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.Owner != "ann" || e.ConversationID != "ann-1" {
					t.Errorf("%+v read %s's event of %s", q, e.Owner, e.ConversationID)
				}
			}
			if len(evs) == 0 && q.ConversationID != "bob-1" {
				t.Errorf("%+v read nothing", q)
			}
		}
		all, err := s.EncodedEvents(t.Context(), agent.EventQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 9 || all[0].Owner != "ann" || all[2].Owner != agent.LocalUser {
			t.Errorf("an admin's replay: %d events, owners %q %q", len(all), all[0].Owner, all[2].Owner)
		}

		cs, total, err := s.ConversationsOf(t.Context(), "ann", nil, 0, 10)
		if err != nil || total != 1 || len(cs) != 1 || cs[0].ID != "ann-1" || cs[0].Owner != "ann" {
			t.Errorf("ConversationsOf(ann) = %+v, %d, %v", cs, total, err)
		}
		if c, err := s.Conversation(t.Context(), "old-1"); err != nil || agent.OwnerOf(c) != agent.LocalUser {
			t.Errorf("old-1 is owned by %q (%v), want local", c.Owner, err)
		}

		q, _ := agent.ParseSearch("apples", 0)
		q.Owner = "ann"
		res, err := s.Search(t.Context(), q)
		if err != nil || len(res) != 1 || res[0].ConversationID != "ann-1" {
			t.Errorf("ann's search = %+v, %v", res, err)
		}
		if res := search(t, s, "apples"); len(res) != 2 {
			t.Errorf("an admin's search = %v, want ann-1 and old-1", ids(res))
		}
	})
}

// A member's replay of the whole log reads their events by the owner
// index, not every event filtered after the read: event_owner on SQLite
// (its plans in TestEventIndexesServeTheirReads), idx_event_owner_seq on
// PostgreSQL.
func TestMemberReplayUsesTheOwnerIndex(t *testing.T) {
	t.Parallel()
	s := open(t, postgresSchema(t), Options{})
	for q, args := range map[string][]any{
		"SELECT seq, id, type, conversation_id, payload FROM agent_event WHERE seq > $1 AND owner = $2 ORDER BY seq LIMIT $3":         {0, "x", 10},
		"SELECT seq, id, conversation_id, payload FROM agent_event WHERE seq > $1 AND type = $2 AND owner = $3 ORDER BY seq LIMIT $4": {0, "agent", "x", 10},
	} {
		// One connection: the setting and the plan in one transaction
		// (a near-empty table would be read whole otherwise).
		var plan []string
		if err := s.w.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SET LOCAL enable_seqscan = off").Error; err != nil {
				return err
			}
			return tx.Raw("EXPLAIN "+q, args...).Scan(&plan).Error
		}); err != nil {
			t.Fatal(err)
		}
		if p := strings.Join(plan, "; "); !strings.Contains(p, "idx_event_owner_seq") {
			t.Errorf("%s\nplan: %s (want idx_event_owner_seq)", q, p)
		}
	}
}

// A database made before accounts opens with every conversation and
// event owned by the implicit admin, local.
func TestOldDatabaseBelongsToLocal(t *testing.T) {
	t.Parallel()
	path := "sqlite:" + t.TempDir() + "/a.db"
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, createdRec("c1", "one"), textRec("c1", "x"))
	for _, q := range []string{
		"DROP TABLE event_owner", "DROP INDEX IF EXISTS " + droppedOwnerIndex, "DELETE FROM meta WHERE key = '" + metaOwnerIndexedThrough + "'",
		"DROP INDEX idx_conversation_owner_recent", "DROP INDEX idx_conversation_owner_list",
		"ALTER TABLE agent_event DROP COLUMN owner", "ALTER TABLE conversation DROP COLUMN owner", forgetSchemaPrint,
	} {
		if err := s.w.Exec(q).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, Options{})
	c, err := s.Conversation(t.Context(), "c1")
	if err != nil || c.Owner != agent.LocalUser {
		t.Fatalf("c1 owner %q, %v", c.Owner, err)
	}
	evs, err := s.EncodedEvents(t.Context(), agent.EventQuery{Owner: agent.LocalUser})
	if err != nil || len(evs) != 2 {
		t.Fatalf("local's events: %d, %v", len(evs), err)
	}
}
