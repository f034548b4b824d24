package store

import (
	"context"
	"errors"
	"testing"

	"github.com/agentik/agentik/internal/testwait"
)

// TestLeadOneAtATime: of two instances on one PostgreSQL schema one leads
// a name; the other waits, and leads once the first gives the lead up;
// a third, waiting, leads when the second's connection is killed, whose
// context ends with ErrLeadLost. Another name, or another schema, is led
// apart.
func TestLeadOneAtATime(t *testing.T) {
	t.Parallel()
	dsn := postgresOnly(t)
	a, b, c := open(t, dsn, Options{}), open(t, dsn, Options{}), open(t, dsn, Options{})
	other := open(t, postgresOnly(t), Options{})
	ctx := t.Context()

	actx, aGive, err := a.Lead(ctx, "deliver")
	if err != nil {
		t.Fatal(err)
	}
	type led struct {
		ctx  context.Context
		give context.CancelFunc
		err  error
	}
	wait := func(s *Store) chan led {
		ch := make(chan led, 1)
		go func() { l, g, err := s.Lead(ctx, "deliver"); ch <- led{l, g, err} }()
		return ch
	}
	bLed := wait(b)
	// Another name and another schema lead at once meanwhile.
	for _, s := range []*Store{b, other} {
		name := "else"
		if s == other {
			name = "deliver"
		}
		_, give, err := s.Lead(ctx, name)
		if err != nil {
			t.Fatalf("lead %s: %v", name, err)
		}
		give()
	}
	testwait.For(t, "b waiting on the lead", func() bool {
		var n int64
		key := lockKey("lead deliver", a.epoch)
		a.r.Raw("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = ? AND objid = ? AND objsubid = 1",
			uint32(uint64(key)>>32), uint32(uint64(key))).Scan(&n)
		return n > 0
	})
	select {
	case l := <-bLed:
		t.Fatalf("b leads while a does: %v", l.err)
	default:
	}
	aGive()
	if actx.Err() == nil {
		t.Fatal("a's lead context alive after giving the lead up")
	}
	l := <-bLed
	if l.err != nil {
		t.Fatal(l.err)
	}
	defer l.give()
	cLed := wait(c)
	// b's connection dies: its context ends with ErrLeadLost and c leads.
	testwait.For(t, "b's lead connection killed", func() bool {
		var n int64
		key := lockKey("lead deliver", a.epoch) // the holder's, granted
		a.r.Raw("SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = ? AND objid = ? AND objsubid = 1",
			uint32(uint64(key)>>32), uint32(uint64(key))).Scan(&n)
		return n > 0
	})
	<-l.ctx.Done()
	if !errors.Is(context.Cause(l.ctx), ErrLeadLost) {
		t.Errorf("b's lead ended with %v, want ErrLeadLost", context.Cause(l.ctx))
	}
	cl := <-cLed
	if cl.err != nil {
		t.Fatal(cl.err)
	}
	cl.give()
}

// TestLeadSQLite: one process has a SQLite database and leads at once.
func TestLeadSQLite(t *testing.T) {
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{})
	lctx, give, err := s.Lead(t.Context(), "deliver")
	if err != nil || lctx.Err() != nil {
		t.Fatalf("lead: %v %v", err, lctx.Err())
	}
	give()
	if lctx.Err() == nil {
		t.Fatal("alive after give")
	}
}
