package store

import (
	"slices"
	"strings"
	"testing"
)

// TestEventIndexesServeTheirReads holds docs/ARCHITECTURE.md's account of
// agent_event's indexes: besides the primary key seq there are exactly
// the unique id, (owner, seq) and (conversation_id, seq), and the last is
// what a conversation's replay and its oldest event read (without it
// SQLite reads every event after the cursor, or scans the table).
func TestEventIndexesServeTheirReads(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{})
	var names []string
	if err := s.r.Raw("SELECT name FROM pragma_index_list('agent_event')").Scan(&names).Error; err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if want := []string{"idx_agent_event_id", "idx_event_conversation_seq", "idx_event_owner_seq"}; !slices.Equal(names, want) {
		t.Errorf("agent_event's indexes are %v, want %v (docs/ARCHITECTURE.md says why each is there)", names, want)
	}
	for q, args := range map[string][]any{
		// EncodedEvents of one conversation
		"SELECT seq, payload FROM agent_event WHERE seq > ? AND conversation_id = ? AND type = ? ORDER BY seq LIMIT ?": {0, "c", "conversation", 10},
		// ConversationPruned: a conversation's oldest event
		"SELECT seq, type, payload FROM agent_event WHERE conversation_id = ? ORDER BY seq LIMIT 1": {"c"},
	} {
		var plan []struct {
			ID, Parent, Notused int
			Detail              string
		}
		if err := s.r.Raw("EXPLAIN QUERY PLAN "+q, args...).Scan(&plan).Error; err != nil {
			t.Fatal(err)
		}
		var details []string
		for _, p := range plan {
			details = append(details, p.Detail)
		}
		if p := strings.Join(details, "; "); !strings.Contains(p, "idx_event_conversation_seq") {
			t.Errorf("%s\nplan: %s (want idx_event_conversation_seq)", q, p)
		}
	}
}
