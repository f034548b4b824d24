package store

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestDeleteRedactsEvents: after a delete, nothing the conversation said
// is readable in the event log, and the seqs stay exactly as they were.
func TestDeleteRedactsEvents(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		mustAppend(t, s, createdRec("c1", "secret-title"))
		mustAppend(t, s, createdRec("c2", "kept-title"))
		mustAppend(t, s, userRec("c1", "secret-question", ""), textRec("c1", "secret-answer"), renamedRec("c1", "secret-rename"))
		mustAppend(t, s, userRec("c2", "kept-question", ""))
		before, err := s.Events(t.Context(), agent.EventQuery{})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, deletedRec("c1"))

		after, err := s.Events(t.Context(), agent.EventQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before)+1 {
			t.Fatalf("%d events after the delete, want %d", len(after), len(before)+1)
		}
		for i, ev := range after {
			if ev.Seq != int64(i+1) {
				t.Errorf("event %d has seq %d: the log has a gap", i, ev.Seq)
			}
			if i < len(before) && (ev.ID != before[i].ID || !ev.Date.Equal(before[i].Date) || ev.ConversationID != before[i].ConversationID) {
				t.Errorf("event %d: %+v, was %+v", i, ev, before[i])
			}
		}
		var all strings.Builder
		for _, ev := range after {
			b, err := ev.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
			all.WriteByte('\n')
		}
		if strings.Contains(all.String(), "secret") {
			t.Errorf("a deleted conversation's content is still in the log:\n%s", all.String())
		}
		for _, kept := range []string{"kept-title", "kept-question"} {
			if !strings.Contains(all.String(), kept) {
				t.Errorf("another conversation's %q was redacted too", kept)
			}
		}
		conv, err := s.Events(t.Context(), agent.EventQuery{ConversationID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(conv) != 2 {
			t.Fatalf("c1 has %d conversation events, want its 2 (redacted)", len(conv))
		}
		for _, ev := range conv {
			if ev.Event == nil || ev.Event.Type != EventRedacted {
				t.Errorf("c1 event %d: %+v, want redacted", ev.Seq, ev.Event)
			}
		}
	})
}
