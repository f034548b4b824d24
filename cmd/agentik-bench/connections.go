package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

// connectionsP99 is the first-token p99 the connections scenario holds
// agentik to (issue 54).
const connectionsP99 = 250.0 // ms

// connections: a team's worth of open tabs. ConnConns WebSocket
// connections spread over ConnUsers users, each connection subscribed to
// its user's all stream (on the bare relay: to its user's run), are
// opened on one server; the growth of its resident memory over the count
// is the memory per connection. Then every user's conversation runs one
// turn (the turns staggered over one token interval) and the figure is
// the time from the model's first token to each of its owner's
// connections reading it: every connection's first token, p99. Every
// connection must read its turn's text exactly.
func (b *bench) connections(ctx context.Context) error {
	want := b.sz.ConnConns
	if b.connOverride > 0 {
		want = b.connOverride
	}
	n, limitNote := b.fdRoom(want)
	users := max(1, min(b.sz.ConnUsers, n))
	bare, err := b.connectionsOn(ctx, "bare", n, users)
	if err != nil {
		return err
	}
	ag, err := b.connectionsOn(ctx, "agentik", n, users)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("%d connections over %d users, each subscribed to its user's all stream (bare: its user's run); opened in %.1f s (bare %.1f s)%s",
		n, users, ag.dial.Seconds(), bare.dial.Seconds(), limitNote)
	b.add(Row{Scenario: "connections", Metric: "server memory per connection (RSS)", Unit: "KiB", Bare: bare.rssPerConn / 1024, Agentik: ag.rssPerConn / 1024,
		Target: "≤ 40 KiB", Note: note}, func(r Row) bool { return r.Agentik <= 40 })
	ntok, delay := b.sz.ConnTokens, b.sz.FanoutDelay
	b.add(Row{Scenario: "connections", Metric: "a turn's first token → every connection of its owner, p99", Unit: "ms",
		Bare: quantileMS(bare.first, 0.99), Agentik: quantileMS(ag.first, 0.99), Target: fmt.Sprintf("≤ %.0f ms", connectionsP99),
		Note: fmt.Sprintf("%d turns (one a user) × %d tokens at %.0f tokens/s; p50 bare %.1f, agentik %.1f ms; %d samples", users, ntok, float64(time.Second)/float64(delay),
			quantileMS(bare.first, 0.5), quantileMS(ag.first, 0.5), len(ag.first))},
		func(r Row) bool { return r.Agentik <= connectionsP99 })
	b.add(Row{Scenario: "connections", Metric: "connections whose text was not the model's, exactly once and in order", Unit: "count",
		Bare: float64(bare.lost), Agentik: float64(ag.lost), Target: "0"}, func(r Row) bool { return r.Agentik == 0 })
	return nil
}

// connResult is what one side of the connections scenario measured.
type connResult struct {
	rssPerConn float64 // bytes
	first      []time.Duration
	lost       int
	dial       time.Duration
}

// connectionsOn opens n connections over users users on one side ("bare"
// or "agentik"), measures their memory, then runs a turn a user.
func (b *bench) connectionsOn(ctx context.Context, side string, n, users int) (connResult, error) {
	var res connResult
	ntok, delay := b.sz.ConnTokens, b.sz.FanoutDelay
	var (
		t    target
		err  error
		keys = make([]string, users) // bearer keys (agentik) or run keys (bare)
		runs = make([]string, users) // each user's conversation (agentik) or run (bare)
	)
	if side == "bare" {
		t, err = startBare(ctx, b.fake.URL)
		tag := newRunTag()
		for u := range users {
			keys[u] = fmt.Sprintf("c%s-%d", tag, u)
			runs[u] = keys[u]
		}
	} else {
		admin := "bench-admin-" + agent.NewID()
		t, err = b.agentik(ctx, "connections.db", "AGENTIK_API_KEYS="+admin)
		if err == nil {
			if keys, err = b.makeUsers(ctx, t, admin, users); err == nil {
				runs, err = b.createConversations(ctx, t.URL(), users, func(u int) string { return fmt.Sprintf("connections %d", u) }, func(u int) string { return keys[u] })
			}
		}
	}
	if t != nil {
		defer t.Close()
	}
	if err != nil {
		return res, err
	}
	closeClientIdle() // the setup's keep-alive connections are not the figure's
	time.Sleep(200 * time.Millisecond)
	rss0 := t.RSS()
	conns := make([]*wsClient, n)
	sinks := make([]*sink, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	b.progress("connections %s: opening %d WebSocket connections over %d users", side, n, users)
	t0 := time.Now()
	err = parallel(ctx, n, 32, func(ctx context.Context, j int) error {
		u := j % users
		s := newSink(runs[u], b.fake)
		sinks[j] = s
		on := func(f *frame, at time.Time) {
			if f.Type == protocol.FrameEvent && f.Event != nil && f.Event.Kind == agent.KindConversation && f.Event.ConversationID == runs[u] {
				s.add(&f.Event.Event, f.Event.Seq, at)
			}
		}
		if side == "bare" {
			c, err := dialWSWith(ctx, wsURL(t.URL(), "/ws?run="+keys[u]), on, skimTexts, "")
			conns[j] = c
			return err
		}
		c, err := dialWSWith(ctx, wsURL(t.URL(), "/agentik/ws"), on, skimTexts, keys[u])
		conns[j] = c
		if err != nil {
			return err
		}
		_, err = c.subscribe(ctx, "all", "", -1)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("connections %s: %w", side, err)
	}
	res.dial = time.Since(t0)
	time.Sleep(min(time.Second, b.sz.IdleWindow)) // let the server settle (and the bare relay register the last ones)
	res.rssPerConn = float64(t.RSS()-rss0) / float64(n)
	if side == "agentik" {
		b.heap("connections")
	}
	b.progress("connections %s: %d open after %.1f s, %.1f KiB each; %d turns of %d tokens", side, n, res.dial.Seconds(), res.rssPerConn/1024, users, ntok)
	var wg sync.WaitGroup
	errc := make(chan error, users)
	start := time.Now()
	for u := range users {
		if d := time.Until(start.Add(delay * time.Duration(u) / time.Duration(users))); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			var err error
			if side == "bare" {
				err = b.bareSend(ctx, t.URL(), keys[u], prompt(ntok, delay, runs[u]))
			} else {
				_, err = sendTurn(ctx, conns[u], runs[u], prompt(ntok, delay, runs[u]))
			}
			if err != nil {
				errc <- err
			}
		})
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return res, err
	}
	deadline := time.After(time.Duration(ntok)*delay + 2*time.Minute)
	for j, s := range sinks {
		select {
		case <-s.done:
		case <-deadline:
			return res, fmt.Errorf("connections %s: connection %d saw no end of its turn", side, j)
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	want := llmtest.Tokens(ntok)
	for _, s := range sinks {
		if len(s.lat) > 0 {
			res.first = append(res.first, s.lat[0])
		}
		if s.text.String() != want || s.disorder > 0 {
			res.lost++
		}
	}
	if side == "bare" {
		res.lost += int(bareDropped(ctx, b.hc, t.URL()))
	}
	b.progress("connections %s: first token p50 %.1f ms, p99 %.1f ms; %d connections off", side, quantileMS(res.first, 0.5), quantileMS(res.first, 0.99), res.lost)
	return res, nil
}

// bareSend starts a run on the bare relay.
func (b *bench) bareSend(ctx context.Context, root, key, text string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"/send?run="+key, strings.NewReader(text))
	if err != nil {
		return err
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return fmt.Errorf("bare send: %w", err)
	}
	resp.Body.Close()
	return nil
}

// makeUsers makes n users on agentik (as the admin of key admin) and
// returns a bearer key of each.
func (b *bench) makeUsers(ctx context.Context, t target, admin string, n int) ([]string, error) {
	keys := make([]string, n)
	err := parallel(ctx, n, createWorkers, func(ctx context.Context, i int) error {
		var u struct{ ID string }
		if err := b.postAs(ctx, t.URL()+"/agentik/users", admin, map[string]any{"name": fmt.Sprintf("bench user %d", i)}, &u); err != nil {
			return err
		}
		var k struct{ Key string }
		if err := b.postAs(ctx, t.URL()+"/agentik/users/"+u.ID+"/keys", admin, map[string]any{"name": "bench"}, &k); err != nil {
			return err
		}
		keys[i] = k.Key
		return nil
	})
	if err != nil {
		return nil, err
	}
	return keys, nil
}

// fdReserve is how many descriptors a process keeps for what is not a
// measured connection (the database, the model's connections, pipes).
const fdReserve = 512

// connsThatFit is how many of want connections fit in a process's
// descriptor limit: each takes one descriptor in the server and one in
// the load generator, two in one process when agentik runs in it.
func connsThatFit(want int, limit uint64, sameProcess bool) int {
	per := uint64(1)
	if sameProcess {
		per = 2
	}
	if limit <= fdReserve {
		return 0
	}
	return min(want, int((limit-fdReserve)/per))
}

// fdRoom sets this process's soft limit of open descriptors to its hard
// limit and returns how many of want connections fit, with a note for the
// row when that is fewer. A Go program raises its own soft limit at start
// (this one, and the agentik and bare children: -connections 1500 under
// ulimit -Sn 1024 ran before this set it) but hands an exec'd child the
// limit it was started with unless it sets the limit itself: Setrlimit,
// even to the same value, lets a server that does not raise its own
// inherit the raised one.
func (b *bench) fdRoom(want int) (int, string) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return want, fmt.Sprintf("; RLIMIT_NOFILE unreadable: %v", err)
	}
	note := ""
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
		note = fmt.Sprintf("; setting RLIMIT_NOFILE to its hard limit failed: %v", err)
	}
	n := connsThatFit(want, lim.Cur, b.inproc)
	if n < want {
		note += fmt.Sprintf("; **capped at %d of %d connections by RLIMIT_NOFILE %d**", n, want, lim.Cur)
		b.progress("connections: capped at %d of %d connections by the open-file limit %d", n, want, lim.Cur)
	}
	return max(n, 1), note
}
