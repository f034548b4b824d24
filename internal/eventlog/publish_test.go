package eventlog

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestPublisherInOrderOnce: a Publisher hands each committed event to
// publish once and in seq order: the ones other instances committed below
// a commit's own are read (in pages of CatchUpPage), its own come from
// memory, a stale or repeated call publishes nothing, and a failed read
// publishes nothing more until a later call catches up without a loss.
func TestPublisherInOrderOnce(t *testing.T) {
	t.Parallel()
	var (
		log  []agent.Encoded // the committed events
		fail bool
		got  []int64
	)
	commit := func(n int) []agent.Encoded {
		first := len(log)
		for range n {
			log = append(log, agent.Encoded{Seq: int64(len(log) + 1)})
		}
		return slices.Clone(log[first:])
	}
	read := func(_ context.Context, after, before int64, limit int) ([]agent.Encoded, error) {
		if fail {
			return nil, errors.New("read failed")
		}
		var out []agent.Encoded
		for _, e := range log {
			if e.Seq > after && e.Seq < before && len(out) < limit {
				out = append(out, e)
			}
		}
		return out, nil
	}
	commit(3) // before the store opened
	p := NewPublisher(3, read)
	ctx := t.Context()
	if err := p.UpTo(ctx, 100, commit(1)); err != nil || p.Published() != 3 {
		t.Fatalf("before Start: %v, published %d; want nothing published", err, p.Published())
	}
	if !p.Start(func(evs []agent.Encoded) {
		for _, e := range evs {
			got = append(got, e.Seq)
		}
	}) || p.Start(func([]agent.Encoded) {}) {
		t.Fatal("Start: want true once, then false")
	}
	commit(CatchUpPage + 5) // another instance's, unseen
	own := commit(2)
	if err := p.UpTo(ctx, own[1].Seq, own); err != nil {
		t.Fatal(err)
	}
	if err := p.UpTo(ctx, own[1].Seq, own); err != nil { // again: nothing
		t.Fatal(err)
	}
	fail = true
	commit(3)
	if err := p.UpTo(ctx, int64(len(log)), nil); err == nil {
		t.Error("a failed read: want its error")
	}
	fail = false
	if err := p.UpTo(ctx, int64(len(log)), nil); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for s := int64(4); s <= int64(len(log)); s++ {
		want = append(want, s)
	}
	if !slices.Equal(got, want) || p.Published() != int64(len(log)) {
		t.Errorf("published %d events, %d..%d, through %d; want each of 4..%d once, in order", len(got), got[0], got[len(got)-1], p.Published(), len(log))
	}
}
