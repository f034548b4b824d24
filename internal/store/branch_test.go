package store

import (
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

func treeOf(t *testing.T, s *Store, cid string) (map[string]string, string) {
	t.Helper()
	nodes, head, err := s.Tree(t.Context(), cid)
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	for _, n := range nodes {
		parents[n.ID] = n.Parent
	}
	return parents, head
}

// A message follows the head and becomes it; a record's Head moves the
// head first; rows from before branches (NULL parent, NULL head) follow
// the previous message.
func TestTreeAndHead(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		r1, r2, r3 := userRec("c1", "one", ""), userRec("c1", "two", ""), userRec("c1", "two again", "")
		mustAppend(t, s, createdRec("c1", ""), r1, r2)
		id1, id2 := r1.Event.Event.Message.ID, r2.Event.Event.Message.ID
		if p := r2.Event.Event.Message.ParentID; p != id1 {
			t.Errorf("the appended message follows %q, want %q", p, id1)
		}
		root := ""
		r3.Head = &id1
		mustAppend(t, s, r3)
		id3 := r3.Event.Event.Message.ID
		parents, head := treeOf(t, s, "c1")
		if parents[id1] != "" || parents[id2] != id1 || parents[id3] != id1 || head != id3 {
			t.Errorf("tree %v head %s", parents, head)
		}
		// The published event names the parent too.
		evs := allEvents(t, s)
		if m := evs[len(evs)-1].Event.Message; m.ParentID != id1 {
			t.Errorf("stored event's message follows %q", m.ParentID)
		}
		c, err := s.Conversation(t.Context(), "c1")
		if err != nil || c.Head != id3 {
			t.Errorf("conversation head %q, %v", c.Head, err)
		}
		// A head that is no message of the conversation is not_found; a
		// running conversation's head is busy; nothing changes.
		bad := "nope"
		wantCode(t, s.Append(t.Context(), &agent.Record{Event: renamedRec("c1", "x").Event, Head: &bad}), agent.CodeNotFound)
		mustAppend(t, s, &agent.Record{Event: textRec("c1", "t").Event, Turn: agent.TurnStart})
		wantCode(t, s.Append(t.Context(), &agent.Record{Event: renamedRec("c1", "x").Event, Head: &root}), agent.CodeBusy)
		if _, head := treeOf(t, s, "c1"); head != id3 {
			t.Errorf("head moved to %q", head)
		}

		// Before branches: NULL parents and head.
		mustAppend(t, s, createdRec("c2", ""))
		l1, l2 := userRec("c2", "a", ""), userRec("c2", "b", "")
		mustAppend(t, s, l1, l2)
		if err := s.w.Exec("UPDATE message SET parent_id = NULL WHERE conversation_id = 'c2'").Error; err != nil {
			t.Fatal(err)
		}
		if err := s.w.Exec("UPDATE conversation SET head = NULL WHERE id = 'c2'").Error; err != nil {
			t.Fatal(err)
		}
		parents, head = treeOf(t, s, "c2")
		a, b := l1.Event.Event.Message.ID, l2.Event.Event.Message.ID
		if parents[a] != "" || parents[b] != a || head != b {
			t.Errorf("legacy tree %v head %s", parents, head)
		}
		l3 := userRec("c2", "c", "")
		mustAppend(t, s, l3)
		if p := l3.Event.Event.Message.ParentID; p != b {
			t.Errorf("a message after legacy ones follows %q, want %q", p, b)
		}
		ms, err := s.MessagesByID(t.Context(), "c2", []string{l3.Event.Event.Message.ID, a})
		if err != nil || len(ms) != 2 || ms[0].ID != a {
			t.Errorf("MessagesByID = %v, %v", ms, err)
		}
	})
}
