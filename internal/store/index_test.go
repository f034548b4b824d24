package store

import (
	"slices"
	"strings"
	"testing"
)

// TestEventIndexesServeTheirReads holds docs/ARCHITECTURE.md's account of
// the log's indexes: besides the primary key seq, agent_event has exactly
// the unique id, and a conversation's events are found by
// event_conversation, an owner's by event_owner (convindex.go): a replay, a
// conversation's oldest event and its redaction read that table by key and
// the rows by seq, and Prune deletes its rows by their key (without that,
// SQLite reads every event after the cursor, or scans a table).
func TestEventIndexesServeTheirReads(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{Mode: ModeFast})
	var names []string
	if err := s.r.Raw("SELECT name FROM pragma_index_list('agent_event')").Scan(&names).Error; err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if want := []string{"idx_agent_event_id"}; !slices.Equal(names, want) {
		t.Errorf("agent_event's indexes are %v, want %v (docs/ARCHITECTURE.md says why each is there)", names, want)
	}
	for q, args := range map[string][]any{
		convRuns.RunsSQL(): {"c", 0}, // a conversation's rows
		convEventsSQL + "(" + seqList([]int64{3, 5, 8}) + ") AND type = ? ORDER BY seq": {"conversation"}, // their events
		convRangeSQL + " AND type = ? ORDER BY seq":                                     {1, 9, "c", "conversation"},
		convRuns.PruneSQL(): {10},
		ownerRuns.RunsSQL(): {"ann", 0}, // a member's rows
		"SELECT seq, id, type, conversation_id, payload" + eventsBySeq + "(" + seqList([]int64{3, 5, 8}) + ") ORDER BY seq": nil, // their events
		"SELECT seq, id, conversation_id, payload" + ownerRangeFrom + " AND type = ? ORDER BY seq":                          {1, 9, "ann", "agent"},
		ownerRuns.PruneSQL(): {10},
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
		p := strings.Join(details, "; ")
		if strings.Contains(p, "SCAN") || (strings.Contains(q, "event_conversation") && !strings.Contains(p, "PRIMARY KEY (conversation_id=?")) ||
			(strings.Contains(q, "event_owner") && !strings.Contains(p, "PRIMARY KEY (owner=?")) ||
			(strings.Contains(q, "agent_event") && !strings.Contains(p, "INTEGER PRIMARY KEY (rowid")) {
			t.Errorf("%s\nplan: %s (want event_conversation and event_owner by their keys, agent_event by seq, no scan)", q, p)
		}
	}
}
