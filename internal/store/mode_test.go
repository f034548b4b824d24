package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentik/agentik/internal/agent"
)

// A database written in one mode opens in the other with every read
// equal (replay of the log, of a conversation, of an owner, in pages;
// history; the lists; search; bounds; cursors), both ways, and goes on
// in it: fast folds nothing and plain finds the delta log's events in
// agent_event; fast, back again, finds by its run indexes the events
// plain mode wrote.
func TestModesOpenEachOther(t *testing.T) {
	t.Parallel()
	for _, way := range [][2]Mode{{ModeFast, ModePlain}, {ModePlain, ModeFast}} {
		t.Run(fmt.Sprintf("%s-then-%s", way[0], way[1]), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "a.db")
			clk := newClock()
			reopen := func(mode Mode) *Store {
				t.Helper()
				s, err := Open(t.Context(), "sqlite:"+path, Options{Mode: mode, Now: clk.now})
				if err != nil {
					t.Fatalf("open in %s mode: %v", mode, err)
				}
				return s
			}
			closeStore := func(s *Store) {
				t.Helper()
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}

			a := reopen(way[0])
			writeModeHistory(t, a, clk, "1")
			if _, err := a.Prune(t.Context(), clk.now().Add(-30*time.Minute)); err != nil {
				t.Fatal(err)
			}
			if way[0] == ModeFast && a.side.Count() == 0 {
				t.Fatal("fast mode wrote no text delta to the delta log: the test does not cover folding it")
			}
			want := readModeAll(t, a)
			closeStore(a)

			b := reopen(way[1])
			if diff := cmp.Diff(want, readModeAll(t, b)); diff != "" {
				t.Fatalf("reads in %s mode of what %s mode wrote differ (-%s +%s):\n%s", way[1], way[0], way[0], way[1], diff)
			}
			if way[1] == ModePlain {
				if _, err := os.Stat(path + "-deltas"); !os.IsNotExist(err) {
					t.Errorf("plain mode left the delta log in place (%v)", err)
				}
			}
			writeModeHistory(t, b, clk, "2")
			want = readModeAll(t, b)
			closeStore(b)

			c := reopen(way[0])
			defer closeStore(c)
			if diff := cmp.Diff(want, readModeAll(t, c)); diff != "" {
				t.Fatalf("reads in %s mode of what %s mode wrote differ (-%s +%s):\n%s", way[0], way[1], way[1], way[0], diff)
			}
			if way[0] == ModeFast {
				if names := eventIndexes(t, c); !slices.Equal(names, []string{"idx_agent_event_id"}) {
					t.Errorf("fast mode kept agent_event's indexes %v, want plain mode's dropped", names)
				}
			}
			// And it goes on writing where the other left off.
			mustAppend(t, c, textRec("ann-"+"2", " more"))
			if evs := allEvents(t, c); evs[len(evs)-1].Seq != want.Head+1 {
				t.Errorf("the next event got seq %d, want %d", evs[len(evs)-1].Seq, want.Head+1)
			}
		})
	}
}

// writeModeHistory writes conversations of two owners and of the local
// admin: text deltas alone (the delta log's in fast mode) and between
// other events, messages, memory, a rename and a deleted conversation.
func writeModeHistory(t *testing.T, s *Store, clk *clock, n string) {
	t.Helper()
	old, ann, bob, gone := "old-"+n, "ann-"+n, "bob-"+n, "gone-"+n
	mustAppend(t, s, createdRec(old, "apples long ago "+n))
	mustAppend(t, s, textRec(old, "early"))
	clk.advance(time.Hour)
	mustAppend(t, s, ownedRec(ann, "apples of ann "+n, "ann"), ownedRec(bob, "apples of bob "+n, "bob"), createdRec(gone, "apples to forget"))
	for i := range 5 {
		mustAppend(t, s, textRec(ann, fmt.Sprintf(" a%d", i)))
		mustAppend(t, s, textRec(bob, fmt.Sprintf(" b%d", i)), textRec(gone, fmt.Sprintf(" secret %d", i)))
	}
	mustAppend(t, s, assistantRec(ann, "apples again"), userRec(bob, "more apples please", ""))
	mustAppend(t, s, &agent.Record{Event: textRec(ann, " x").Event, Memory: []agent.ModelMessage{{Role: agent.RoleUser, Content: []agent.Content{agent.Text("remember apples")}}}})
	mustAppend(t, s, renamedRec(bob, "pears of bob "+n))
	mustAppend(t, s, textRec(gone, " last secret"))
	mustAppend(t, s, deletedRec(gone))
	mustAppend(t, s, textRec(ann, " after"), textRec(bob, " after"))
}

// modeReads is everything readModeAll reads.
type modeReads struct {
	Pruned, Head int64
	All, Agent   []agent.AllEvent
	Convs        map[string][]agent.AllEvent // whole, and the same in pages of 2
	Paged        map[string][]agent.AllEvent
	Owners       map[string][]agent.AllEvent
	History      map[string][]agent.Message
	Memory       map[string][]agent.ModelMessage
	List         []agent.Conversation
	ListOf       map[string][]agent.Conversation
	Search       []agent.SearchResult
	ConvPruned   map[string]int64
	EventSeqs    map[string]int64
	Cursor       int64
}

func readModeAll(t *testing.T, s *Store) modeReads {
	t.Helper()
	ctx := t.Context()
	var r modeReads
	var err error
	if r.Pruned, r.Head, err = s.Bounds(ctx); err != nil {
		t.Fatal(err)
	}
	r.All = allEvents(t, s)
	if r.Agent, err = s.Events(ctx, agent.EventQuery{AgentOnly: true}); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range r.All {
		if e.ConversationID != "" {
			ids[e.ConversationID] = true
		}
	}
	r.Convs, r.Paged, r.History, r.Memory = map[string][]agent.AllEvent{}, map[string][]agent.AllEvent{}, map[string][]agent.Message{}, map[string][]agent.ModelMessage{}
	r.ConvPruned, r.EventSeqs = map[string]int64{}, map[string]int64{}
	for id := range ids {
		if r.Convs[id], err = s.Events(ctx, agent.EventQuery{ConversationID: id}); err != nil {
			t.Fatal(err)
		}
		for after := int64(0); ; {
			page, err := s.Events(ctx, agent.EventQuery{ConversationID: id, After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			r.Paged[id] = append(r.Paged[id], page...)
			after = page[len(page)-1].Seq
		}
		if r.History[id], err = s.Messages(ctx, agent.MessageQuery{ConversationID: id, All: true}); err != nil && agent.ErrorCode(err) != agent.CodeNotFound {
			t.Fatal(err)
		}
		if r.Memory[id], err = s.Memory(ctx, id); err != nil && agent.ErrorCode(err) != agent.CodeNotFound {
			t.Fatal(err)
		}
		if r.ConvPruned[id], err = s.ConversationPruned(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	r.Owners, r.ListOf = map[string][]agent.AllEvent{}, map[string][]agent.Conversation{}
	for _, o := range []string{"ann", "bob", agent.LocalUser} {
		if r.Owners[o], err = s.Events(ctx, agent.EventQuery{Owner: o}); err != nil {
			t.Fatal(err)
		}
		if r.ListOf[o], _, err = s.ConversationsOf(ctx, o, nil, 0, 100); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range r.All {
		if e.Event != nil && e.Event.Type == agent.EventAppendText {
			if r.EventSeqs[e.ID], err = s.EventSeq(ctx, e.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r.List, _, err = s.Conversations(ctx, 0, 100); err != nil {
		t.Fatal(err)
	}
	if r.Search, err = s.Search(ctx, agent.SearchQuery{Terms: []string{"apples"}, Limit: 50}); err != nil {
		t.Fatal(err)
	}
	if r.Cursor, err = s.CursorAt(ctx, newClock().now().Add(90*time.Minute)); err != nil {
		t.Fatal(err)
	}
	return r
}

func eventIndexes(t *testing.T, s *Store) []string {
	t.Helper()
	var names []string
	if err := s.r.Raw("SELECT name FROM pragma_index_list('agent_event')").Scan(&names).Error; err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// In plain mode a conversation's and an owner's events, a conversation's
// seqs (its redaction, its oldest event) are read from agent_event by the
// ordinary indexes (conversation_id, seq) and (owner, seq).
func TestPlainIndexesServeTheirReads(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{Mode: ModePlain})
	if names, want := eventIndexes(t, s), []string{plainConvIndex, "idx_agent_event_id", plainOwnerIndex}; !slices.Equal(names, want) {
		t.Errorf("agent_event's indexes are %v, want %v", names, want)
	}
	for q, args := range map[string][]any{
		plainConv.SeqsSQL(): {"c", 0},
		plainConvEventsSQL + " AND owner = ? ORDER BY seq LIMIT 5":                                                         {"c", 0, "conversation", "ann"},
		"SELECT seq, id, type, conversation_id, payload FROM agent_event WHERE seq > ? AND owner = ? ORDER BY seq LIMIT 5": {0, "ann"},
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
		want := plainConvIndex
		if !strings.Contains(q, "conversation_id = ?") {
			want = plainOwnerIndex
		}
		if !strings.Contains(p, "INDEX "+want+" (") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s\nplan: %s (want %s, in its order)", q, p, want)
		}
	}
}
