package store

import (
	"slices"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// filedRec files conversation cid: pinned and archived when not nil.
func filedRec(cid string, pinned, archived *bool) *agent.Record {
	return &agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: "ev-" + newID(), Agent: &agent.AgentEvent{Type: agent.AgentUpdated, ConversationID: cid, Pinned: pinned, Archived: archived}}}
}

func listIDs(t *testing.T, s *Store, owner string) []string {
	t.Helper()
	var cs []agent.Conversation
	var err error
	if owner == "" {
		cs, _, err = s.Conversations(t.Context(), 0, 0)
	} else {
		cs, _, err = s.ConversationsOf(t.Context(), owner, nil, 0, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

// TestPinAndArchive: the list puts the archived last and the pinned first,
// each group newest first; filing a conversation leaves its updated_at;
// a database from before filing opens with nothing pinned or archived.
func TestPinAndArchive(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		clk := newClock()
		s, err := Open(t.Context(), dsn, Options{Now: clk.now})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"c1", "c2", "c3", "c4"} {
			mustAppend(t, s, createdRec(id, id))
			clk.advance(time.Minute)
		}
		before, err := s.Conversation(t.Context(), "c1")
		if err != nil {
			t.Fatal(err)
		}
		yes, no := true, false
		mustAppend(t, s, filedRec("c1", &yes, nil), filedRec("c4", nil, &yes), filedRec("c2", &yes, &yes))
		for _, owner := range []string{"", agent.LocalUser} {
			if got, want := listIDs(t, s, owner), []string{"c1", "c3", "c2", "c4"}; !slices.Equal(got, want) {
				t.Errorf("list (owner %q) = %v, want %v: pinned first, archived last (pinned first among them)", owner, got, want)
			}
		}
		c1, err := s.Conversation(t.Context(), "c1")
		if err != nil {
			t.Fatal(err)
		}
		if !c1.Pinned || c1.Archived || !c1.UpdatedAt.Equal(before.UpdatedAt) {
			t.Errorf("c1 after pinning: pinned %v archived %v updated %v (was %v)", c1.Pinned, c1.Archived, c1.UpdatedAt, before.UpdatedAt)
		}
		mustAppend(t, s, filedRec("c1", &no, nil), filedRec("c4", nil, &no))
		if got, want := listIDs(t, s, ""), []string{"c4", "c3", "c1", "c2"}; !slices.Equal(got, want) {
			t.Errorf("list after unpinning c1 and unarchiving c4 = %v, want %v", got, want)
		}

		// A database from before filing.
		for _, q := range []string{"DROP INDEX idx_conversation_list", "DROP INDEX idx_conversation_owner_list",
			"ALTER TABLE conversation DROP COLUMN pinned", "ALTER TABLE conversation DROP COLUMN archived", forgetSchemaPrint} {
			if err := s.w.Exec(q).Error; err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2 := open(t, dsn, Options{Now: clk.now})
		if got, want := listIDs(t, s2, ""), []string{"c4", "c3", "c2", "c1"}; !slices.Equal(got, want) {
			t.Errorf("old database: list = %v, want %v", got, want)
		}
		mustAppend(t, s2, filedRec("c3", &yes, nil))
		if got, want := listIDs(t, s2, ""), []string{"c3", "c4", "c2", "c1"}; !slices.Equal(got, want) {
			t.Errorf("old database, c3 pinned: list = %v, want %v", got, want)
		}
	})
}
