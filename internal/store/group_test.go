package store

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
)

// TestLightRequestsCommitFirst: while the writer is held in a publish, 20
// user messages (heavy) and then one token (light) queue. The token is
// committed, and published, before every message, and the messages take
// two transactions of at most eventlog.HeavyPerCommit records.
func TestLightRequestsCommitFirst(t *testing.T) {
	var (
		mu    sync.Mutex
		order []agent.Encoded
		hold  = make(chan struct{})
		held  = make(chan struct{}, 1)
	)
	holding := false
	s, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "t.db"), Options{Publish: func(evs []agent.Encoded) {
		mu.Lock()
		order = append(order, evs...)
		h := holding
		holding = false
		mu.Unlock()
		if h {
			held <- struct{}{}
			<-hold
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustAppend(t, s, createdRec("c1", "t"))
	mu.Lock()
	holding = true
	mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { mustAppend(t, s, textRec("c1", "first")) })
	<-held // the writer is inside the first commit's publish
	const heavy = 20
	for i := range heavy {
		wg.Go(func() { mustAppend(t, s, userRec("c1", "m", "")) })
		testwait.For(t, "message queued", func() bool { return s.wr.Queued() == i+1 })
	}
	wg.Go(func() { mustAppend(t, s, textRec("c1", "token")) })
	testwait.For(t, "token queued", func() bool { return s.wr.Queued() == heavy+1 })
	batches0 := s.wr.Stats.Batches
	close(hold)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, ev := range order[2:] { // created, first
		got = append(got, ev.Type)
	}
	if len(got) != heavy+1 || got[0] != agent.EventAppendText {
		t.Fatalf("published after the held commit: %v, want the token first, then %d messages", got, heavy)
	}
	for _, typ := range got[1:] {
		if typ != agent.EventMessage {
			t.Fatalf("published after the held commit: %v", got)
		}
	}
	if n := s.wr.Stats.Batches - batches0; n != 3 {
		t.Errorf("%d transactions after the held one, want 3 (the token; 16 messages; 4)", n)
	}
}

func TestIsLight(t *testing.T) {
	start := textRec("c1", "x")
	start.Turn = agent.TurnStart
	for _, c := range []struct {
		name string
		recs []*agent.Record
		want bool
	}{
		{"token", []*agent.Record{textRec("c1", "a"), textRec("c1", "b")}, true},
		{"message", []*agent.Record{userRec("c1", "m", "")}, false},
		{"token and message", []*agent.Record{textRec("c1", "a"), userRec("c1", "m", "")}, false},
		{"turn start", []*agent.Record{start}, false},
		{"agent event", []*agent.Record{createdRec("c2", "t")}, false},
	} {
		if got := isLight(c.recs); got != c.want {
			t.Errorf("%s: isLight = %v, want %v", c.name, got, c.want)
		}
	}
}
