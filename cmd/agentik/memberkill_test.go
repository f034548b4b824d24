package main

import (
	"bufio"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestKill9MemberReplay kills the real binary while a member's answer
// streams (on SQLite the owner index's entries of its text deltas wait in
// memory then, store/convindex.go), restarts it, and checks that the
// member's replay of the whole log still holds every event they saw before
// the kill, and exactly their conversation's events, as the admin reads
// them.
func TestKill9MemberReplay(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "agentik.db")
	tm := startTeam(t, db)
	tm.fake.Enqueue(llmtest.Reply{Text: strings.Repeat("token ", 2000), Delay: 2 * time.Millisecond})
	var conv agent.Conversation
	must(t, tm.ann.key, "POST", tm.p.url("/agentik/conversations"), `{}`, &conv)

	req, _ := http.NewRequest("POST", tm.p.url("/agentik/conversations/"+conv.ID+"/send"), strings.NewReader(`{"content":[{"type":"text","body":"talk"}]}`))
	req.Header.Set("Authorization", "Bearer "+tm.ann.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	seen := map[string]bool{}
	deltas := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && deltas < 100 {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			seen[id] = true
		}
		if strings.HasPrefix(sc.Text(), "event: append_text") {
			deltas++
		}
	}
	if deltas < 100 {
		t.Fatalf("the stream ended after %d deltas: %v", deltas, sc.Err())
	}
	if err := tm.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = tm.p.cmd.Wait()

	p := start(t, tm.p.addr, db, tm.env...)
	testwait.For(t, "the continued turn to end", func() bool {
		var c agent.Conversation
		must(t, tm.admin, "GET", p.url("/agentik/conversations/"+conv.ID), "", &c)
		return !c.Running
	})
	read := func(key string) []agent.AllEvent { // every page, 100 events each
		var all []agent.AllEvent
		for after := ""; ; {
			var page struct{ Events []agent.AllEvent }
			must(t, key, "GET", p.url("/agentik/events/replay?limit=100&after_id="+after), "", &page)
			all = append(all, page.Events...)
			if len(page.Events) < 100 {
				return all
			}
			after = page.Events[len(page.Events)-1].ID
		}
	}
	var want []int64
	for _, e := range read(tm.admin) {
		if e.ConversationID == conv.ID {
			want = append(want, e.Seq)
		}
	}
	var got []int64
	stored := map[string]bool{}
	for _, e := range read(tm.ann.key) {
		if e.ConversationID != conv.ID {
			t.Errorf("the member's replay holds seq %d of %q", e.Seq, e.ConversationID)
		}
		got = append(got, e.Seq)
		stored[fmt.Sprint(e.Seq)] = true
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(want) < 100 {
		t.Errorf("the member's replay after the restart: %d events %v\nthe admin's of that conversation: %d %v", len(got), got, len(want), want)
	}
	for seq := range seen {
		if !stored[seq] {
			t.Errorf("event %s was delivered to the member before the kill but is not in their replay", seq)
		}
	}
}
