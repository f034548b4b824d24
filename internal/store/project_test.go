package store

import (
	"slices"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// projectRec creates owner's conversation cid in project.
func projectRec(cid, title, owner, project string) *agent.Record {
	rec := ownedRec(cid, title, owner)
	rec.Conversation.Project = project
	return rec
}

// movedRec moves cid into project ("" out).
func movedRec(cid, project string) *agent.Record {
	return &agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: "ev-" + newID(),
		Agent: &agent.AgentEvent{Type: agent.AgentUpdated, ConversationID: cid, Project: &project}}}
}

// The SQL of the project rule on both databases and in both modes: a
// member whose reach names a project reads its conversations' events
// (deltas included), list rows and search hits besides their own; one
// whose reach does not reads none of them; a conversation moved out is
// out of every read at once. Projects and members round-trip.
func TestProjectReach(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{ModeFast, ModePlain} {
		t.Run(string(mode), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, dsn string) {
				s := open(t, dsn, Options{Mode: mode})
				at := time.Now().UTC().Truncate(time.Millisecond)
				p := agent.Project{ID: "proj_1", Name: "Launch", Owner: "ann", Instructions: "be brief", Knowledge: []string{"vs_1"},
					Members: []agent.ProjectMember{{UserID: "bob", Role: agent.ProjectViewer}}, CreatedAt: at, UpdatedAt: at}
				if err := s.PutProject(t.Context(), p); err != nil {
					t.Fatal(err)
				}
				got, err := s.Project(t.Context(), "proj_1")
				if err != nil || got.Name != "Launch" || got.Instructions != "be brief" || !slices.Equal(got.Knowledge, []string{"vs_1"}) || len(got.Members) != 1 || got.Members[0] != p.Members[0] {
					t.Fatalf("project %+v, %v", got, err)
				}

				mustAppend(t, s, projectRec("ann-p", "zebra plans", "ann", "proj_1"), ownedRec("ann-own", "zebra private", "ann"), ownedRec("bob-own", "zebra of bob", "bob"))
				mustAppend(t, s, textRec("ann-p", "a"), assistantRec("ann-p", "zebra answer"), textRec("ann-own", "b"), textRec("bob-own", "c"))

				reads := func(who string, reach []string) (events map[string]int, list []string, hits []string) {
					events = map[string]int{}
					for _, q := range []agent.EventQuery{{Owner: who, Projects: reach}, {Owner: who, Projects: reach, Limit: 3}} {
						after := int64(0)
						for {
							q.After = after
							evs, err := s.EncodedEvents(t.Context(), q)
							if err != nil {
								t.Fatal(err)
							}
							for _, e := range evs {
								if q.Limit == 0 {
									events[e.ConversationID]++
								}
								after = e.Seq
							}
							if len(evs) == 0 || q.Limit == 0 {
								break
							}
						}
					}
					cs, _, err := s.ConversationsOf(t.Context(), who, reach, 0, 10)
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range cs {
						list = append(list, c.ID)
					}
					sq, _ := agent.ParseSearch("zebra", 0)
					sq.Owner, sq.Projects = who, reach
					res, err := s.Search(t.Context(), sq)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range res {
						hits = append(hits, r.ConversationID)
					}
					slices.Sort(list)
					slices.Sort(hits)
					return events, list, hits
				}
				ev, list, hits := reads("bob", []string{"proj_1"})
				if ev["ann-p"] != 3 || ev["bob-own"] != 2 || ev["ann-own"] != 0 {
					t.Errorf("bob's events %v", ev)
				}
				if !slices.Equal(list, []string{"ann-p", "bob-own"}) || !slices.Equal(hits, []string{"ann-p", "bob-own"}) {
					t.Errorf("bob's list %v, search %v", list, hits)
				}
				evs, err := s.EncodedEvents(t.Context(), agent.EventQuery{Owner: "bob", Projects: []string{"proj_1"}, ConversationID: "ann-p"})
				if err != nil || len(evs) != 2 {
					t.Errorf("bob's replay of ann-p: %d, %v", len(evs), err)
				}
				ev, list, hits = reads("eve", nil)
				if len(ev) != 0 || len(list) != 0 || len(hits) != 0 {
					t.Errorf("eve reads %v %v %v", ev, list, hits)
				}
				ev, list, _ = reads("eve", []string{"proj_2"})
				if len(ev) != 0 || len(list) != 0 {
					t.Errorf("eve, of another project, reads %v %v", ev, list)
				}
				if evs, _ := s.EncodedEvents(t.Context(), agent.EventQuery{Owner: "eve", ConversationID: "ann-p"}); len(evs) != 0 {
					t.Errorf("eve's replay of ann-p: %d events", len(evs))
				}

				mustAppend(t, s, movedRec("ann-p", ""))
				ev, list, hits = reads("bob", []string{"proj_1"})
				if ev["ann-p"] != 0 || slices.Contains(list, "ann-p") || slices.Contains(hits, "ann-p") {
					t.Errorf("bob after the move out: %v %v %v", ev, list, hits)
				}
				if c, err := s.Conversation(t.Context(), "ann-p"); err != nil || c.Project != "" || c.Owner != "ann" {
					t.Errorf("moved out: %+v, %v", c, err)
				}
				if err := s.DeleteProject(t.Context(), "proj_1"); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Project(t.Context(), "proj_1"); err == nil {
					t.Error("the deleted project reads")
				}
			})
		})
	}
}
