package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

// soakMaxGrowth is how much resident memory may grow from the warm-up's
// end to the load's (issue 54).
const soakMaxGrowth = 5.0 // %

// soak: a team's mix for -soak-duration (-run soak only). SoakUsers
// users, each with a conversation on an agent whose every tool call waits
// for approval and whose knowledge is a shared base, loop: a turn that
// calls file_search (a knowledge search, once the user's client approves
// it), a text turn of SoakTokens sent while the first runs (queued),
// and every third round a reconnect in the middle of the text turn that
// resumes after the last seq the client read. The server's resident
// memory and goroutines are sampled throughout; the figures are the
// memory's growth from the end of the warm-up (the first fifth) to the
// end of the load, the goroutines after every client closed against
// their count before the load, and the log read back at the end: every
// conversation replayed from its start, each turn there once, each answer
// whole, the seqs rising, and the text each live client read across its
// reconnects equal to the log's.
func (b *bench) soak(ctx context.Context) error {
	users, ntok, delay := b.sz.SoakUsers, b.sz.SoakTokens, b.sz.MixDelay
	admin := "bench-admin-" + agent.NewID()
	t, err := b.agentik(ctx, "soak.db", "AGENTIK_API_KEYS="+admin, knowledgeEnv, "AGENTIK_TITLES=first_line")
	if err != nil {
		return err
	}
	defer t.Close()
	keys, err := b.makeUsers(ctx, t, admin, users)
	if err != nil {
		return err
	}
	if err := b.soakAgent(ctx, t.URL(), admin); err != nil {
		return err
	}
	us := make([]*soakUser, users)
	for i := range us {
		us[i] = &soakUser{b: b, t: t, key: keys[i], rng: rand.New(rand.NewPCG(uint64(i), 7)), approvals: make(chan string, 16), ends: make(chan struct{}, 16)}
		if err := b.postAs(ctx, t.URL()+"/agentik/conversations", us[i].key, map[string]any{"title": fmt.Sprintf("soak %d", i), "agent": "soak"}, &struct{ ID *string }{&us[i].conv}); err != nil {
			return err
		}
	}
	closeClientIdle()
	base, err := b.goroutines(ctx, t.URL(), admin)
	if err != nil {
		return err
	}
	var samples, anons, files, goMems []int64
	var peak int
	var smu sync.Mutex
	sampler, stopSampler := context.WithCancel(ctx)
	sampled := make(chan struct{})
	every := min(10*time.Second, max(time.Second, b.soakFor/200))
	go func() {
		defer close(sampled)
		tick := time.NewTicker(every)
		defer tick.Stop()
		warm := time.NewTimer(b.soakFor / 5) // the warm-up's end (rssGrowth)
		defer warm.Stop()
		for {
			select {
			case <-sampler.Done():
				return
			case <-warm.C:
				b.heapTo("soak", b.memOut+".warm") // -profile soak -memprofile: compare with -base
				continue
			case <-tick.C:
			}
			g, goMem, _ := b.serverMetrics(sampler, t.URL(), admin)
			smu.Lock()
			m := residentOfTarget(t)
			samples, anons, files, goMems = append(samples, m.total), append(anons, m.anon), append(files, m.file), append(goMems, goMem)
			peak = max(peak, g)
			smu.Unlock()
		}
	}()
	b.progress("soak: %d users for %s (a tool call approved and a knowledge search, a queued text turn of %d tokens, a reconnect every third round); %d goroutines before", users, b.soakFor, ntok, base)
	end := time.Now().Add(b.soakFor)
	err = parallel(ctx, users, users, func(ctx context.Context, i int) error { return us[i].loop(ctx, end, ntok, delay) })
	stopSampler()
	<-sampled
	b.heap("soak") // the load's end, before the clients close
	for _, u := range us {
		u.close()
	}
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	// The log, read back.
	var turns, rounds, reconnects, bad int
	var problems []string
	for _, u := range us {
		turns += 2 * u.rounds
		rounds += u.rounds
		reconnects += u.reconnects
		if err := u.check(ctx, ntok); err != nil {
			bad++
			if len(problems) < 3 {
				problems = append(problems, err.Error())
			}
		}
	}
	closeClientIdle()
	after, waited := b.goroutinesBack(ctx, t.URL(), admin, base)
	smu.Lock()
	growth, atWarm, atEnd := rssGrowth(samples)
	anonGrowth, anonWarm, anonEnd := rssGrowth(anons)
	_, fileWarm, fileEnd := rssGrowth(files)
	_, goWarm, goEnd := rssGrowth(goMems)
	n := len(samples)
	smu.Unlock()
	b.progress("soak: %d rounds, %d turns, %d reconnects; RSS %.1f → %.1f MB (%+.1f %%), anonymous %.1f → %.1f MB (%+.1f %%; Go's runtime %.1f → %.1f MB), file-backed %.1f → %.1f MB; goroutines %d before, peak %d, %d after (%.0f s after the load); %d conversations off",
		rounds, turns, reconnects, float64(atWarm)/1e6, float64(atEnd)/1e6, growth, float64(anonWarm)/1e6, float64(anonEnd)/1e6, anonGrowth, float64(goWarm)/1e6, float64(goEnd)/1e6, float64(fileWarm)/1e6, float64(fileEnd)/1e6, base, peak, after, waited.Seconds(), bad)
	b.add(Row{Scenario: "soak", Metric: "anonymous resident memory growth (heap, stacks), end of the warm-up → end of the load", Unit: "%", Agentik: anonGrowth, Target: fmt.Sprintf("≤ %.0f %%", soakMaxGrowth),
		Note: fmt.Sprintf("%s of %d users: %d rounds, %d turns (half with an approved file_search, half queued text of %d tokens at %.0f tokens/s), %d reconnects; RssAnon, medians of the samples of the first tenth after the warm-up (the first fifth) and of the last tenth: %.1f → %.1f MB, of which Go's runtime holds (go_memstats_sys_bytes − heap_released) %.1f → %.1f MB and the rest is outside it (SQLite's C heap through modernc's libc, threads' stacks); %d samples every %s",
			b.soakFor, users, rounds, turns, ntok, float64(time.Second)/float64(delay), reconnects, float64(anonWarm)/1e6, float64(anonEnd)/1e6, float64(goWarm)/1e6, float64(goEnd)/1e6, n, every)},
		func(r Row) bool { return r.Agentik <= soakMaxGrowth })
	b.add(Row{Scenario: "soak", Metric: "resident memory growth in all (VmRSS, with the database's mapped pages)", Unit: "%", Agentik: growth,
		Note: fmt.Sprintf("VmRSS %.1f → %.1f MB; of it file-backed (RssFile: the SQLite file, read through a 1 GiB mmap, grows with the log; pages the kernel may drop) %.1f → %.1f MB",
			float64(atWarm)/1e6, float64(atEnd)/1e6, float64(fileWarm)/1e6, float64(fileEnd)/1e6)}, nil)
	b.add(Row{Scenario: "soak", Metric: "server goroutines after the load (bare: before it)", Unit: "count", Bare: float64(base), Agentik: float64(after), Target: "back to the baseline",
		Note: fmt.Sprintf("peak %d during the load; counted (/metrics go_goroutines) until back within %d of the baseline, %.0f s after every client closed (at most %s)", peak, goroutineSlack(base), waited.Seconds(), b.sz.SoakSettle)},
		func(r Row) bool { return goroutinesSettled(base, after) })
	note := "every conversation replayed from its start: each turn's user message, answer and end once, seqs rising, each live client's text across its reconnects equal to the log's"
	if len(problems) > 0 {
		note += "; " + strings.Join(problems, "; ")
	}
	b.add(Row{Scenario: "soak", Metric: "conversations whose log lost, duplicated or reordered anything", Unit: "count", Agentik: float64(bad), Target: "0", Note: note},
		func(r Row) bool { return r.Agentik == 0 })
	return nil
}

// soakAgent makes the shared knowledge base (one small text file) and
// the agent "soak" (every tool call approved by a person, that base).
func (b *bench) soakAgent(ctx context.Context, root, admin string) error {
	var text strings.Builder
	for i := range 200 {
		fmt.Fprintf(&text, "Rule %d of the handbook: every member reads the rule about topic %d before the meeting.\n\n", i, i%17)
	}
	var f agent.File
	if err := b.postAs(ctx, root+"/agentik/files", admin, map[string]any{"name": "handbook.txt", "media_type": "text/plain", "data": base64.StdEncoding.EncodeToString([]byte(text.String()))}, &f); err != nil {
		return err
	}
	for f.Status == agent.FileProcessing {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if err := b.getAs(ctx, root+"/agentik/files/"+f.ID, admin, &f); err != nil {
			return err
		}
	}
	if f.Status != agent.FileProcessed {
		return fmt.Errorf("soak: the handbook is %s: %s", f.Status, f.Error)
	}
	var k agent.Knowledge
	if err := b.postAs(ctx, root+"/agentik/knowledge", admin, map[string]any{"name": "handbook", "visibility": agent.VisibilityShared, "file_ids": []string{f.ID}}, &k); err != nil {
		return err
	}
	return b.postAs(ctx, root+"/agentik/agents", admin, map[string]any{"slug": "soak", "name": "soak", "tools": []string{"*"}, "approval": "always",
		"visibility": agent.VisibilityShared, "knowledge": []string{k.ID}}, &struct{}{})
}

// getAs GETs url as the user of bearer key and decodes its JSON answer.
func (b *bench) getAs(ctx context.Context, url, key string, out any) error {
	body, err := b.getText(ctx, url, key)
	if err != nil {
		return err
	}
	return jsonUnmarshal([]byte(body), out)
}

func (b *bench) getText(ctx context.Context, url, key string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("get %s: %s: %.300s", url, resp.Status, msg)
	}
	return string(msg), nil
}

// goroutines is the server's go_goroutines of /metrics.
func (b *bench) goroutines(ctx context.Context, root, key string) (int, error) {
	n, _, err := b.serverMetrics(ctx, root, key)
	return n, err
}

// serverMetrics reads the server's goroutines and the memory Go's runtime
// holds from the OS (go_memstats_sys_bytes less what it released), from
// its /metrics.
func (b *bench) serverMetrics(ctx context.Context, root, key string) (goroutines int, goMem int64, err error) {
	text, err := b.getText(ctx, root+"/metrics", key)
	if err != nil {
		return 0, 0, err
	}
	n, ok := parseGoroutines(text)
	if !ok {
		return 0, 0, errors.New("soak: /metrics has no go_goroutines")
	}
	sys, _ := parseMetric(text, "go_memstats_sys_bytes")
	released, _ := parseMetric(text, "go_memstats_heap_released_bytes")
	return n, int64(sys - released), nil
}

// parseGoroutines reads go_goroutines from a Prometheus text exposition.
func parseGoroutines(text string) (int, bool) {
	f, ok := parseMetric(text, "go_goroutines")
	return int(f), ok
}

// parseMetric reads the value of an unlabelled metric from a Prometheus
// text exposition.
func parseMetric(text, name string) (float64, bool) {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// goroutineSlack is how far above the baseline the goroutines may stay:
// a few, for the idle connections a pool keeps.
func goroutineSlack(base int) int { return max(8, base/50) }

// goroutinesSettled is whether n goroutines are back at the baseline base.
func goroutinesSettled(base, n int) bool { return n <= base+goroutineSlack(base) }

// goroutinesBack polls the server's goroutines until they are back at the
// baseline or SoakSettle passed, and returns the last count and the
// time it took.
func (b *bench) goroutinesBack(ctx context.Context, root, key string, base int) (int, time.Duration) {
	t0 := time.Now()
	n := -1
	for {
		closeClientIdle()
		if g, err := b.goroutines(ctx, root, key); err == nil {
			n = g
			if goroutinesSettled(base, g) {
				return g, time.Since(t0)
			}
		}
		if time.Since(t0) > b.sz.SoakSettle || ctx.Err() != nil {
			return n, time.Since(t0)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// rssGrowth is the growth, in %, of resident memory from the end of the
// warm-up (the first fifth of the samples) to the end of the load: the
// median of the tenth of the samples that follows the warm-up against the
// median of the last tenth (medians: one sample caught before a
// collection is not a trend).
func rssGrowth(samples []int64) (growth float64, atWarm, atEnd int64) {
	n := len(samples)
	if n < 3 {
		return 0, 0, 0
	}
	w := max(1, n/10)
	warm := min(n/5, n-2*w)
	med := func(xs []int64) int64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	atWarm, atEnd = med(samples[warm:warm+w]), med(samples[n-w:])
	if atWarm <= 0 {
		return 0, atWarm, atEnd
	}
	return 100 * float64(atEnd-atWarm) / float64(atWarm), atWarm, atEnd
}

// soakUser is one user of the soak: their conversation, their client
// and what it read.
type soakUser struct {
	b    *bench
	t    target
	key  string
	conv string
	rng  *rand.Rand

	ws         *wsClient
	approvals  chan string   // call ids of approval requests read
	ends       chan struct{} // a turn's end read
	rounds     int
	reconnects int

	mu       sync.Mutex
	lastSeq  int64
	text     strings.Builder // every append_text read, across reconnects
	disorder int
}

func (u *soakUser) on(f *frame, at time.Time) {
	if f.Type != protocol.FrameEvent || f.Event == nil || f.Event.Kind != agent.KindConversation {
		return
	}
	u.mu.Lock()
	if f.Event.Seq <= u.lastSeq {
		u.disorder++
	}
	u.lastSeq = max(u.lastSeq, f.Event.Seq)
	ev := f.Event.Event
	if ev.Type == agent.EventAppendText {
		u.text.WriteString(ev.Text)
	}
	u.mu.Unlock()
	switch ev.Type {
	case agent.EventApprovalRequest:
		u.approvals <- ev.CallID
	case agent.EventEnd:
		u.ends <- struct{}{}
	}
}

// connect (re)opens the user's client, resuming after the last seq read.
func (u *soakUser) connect(ctx context.Context) error {
	ws, err := dialWSWith(ctx, wsURL(u.t.URL(), "/agentik/ws"), u.on, skimNone, u.key)
	if err != nil {
		return err
	}
	u.mu.Lock()
	after := u.lastSeq
	u.mu.Unlock()
	if after == 0 {
		after = -1
	}
	if _, err := ws.subscribe(ctx, "conversation", u.conv, after); err != nil {
		ws.Close()
		return err
	}
	u.ws = ws
	return nil
}

func (u *soakUser) close() {
	if u.ws != nil {
		u.ws.Close()
		u.ws = nil
	}
}

// loop runs rounds until end.
func (u *soakUser) loop(ctx context.Context, end time.Time, ntok int, delay time.Duration) error {
	if err := u.connect(ctx); err != nil {
		return err
	}
	// Users start spread over a second.
	time.Sleep(time.Duration(u.rng.Int64N(int64(time.Second))))
	for time.Now().Before(end) {
		send := func(text, onBusy string) error {
			return u.ws.call(ctx, protocol.Command{Op: protocol.OpSend, ConversationID: u.conv, Content: []agent.Content{agent.Text(text)}, OnBusy: onBusy}, nil)
		}
		if err := send(`[[tool=file_search args={"query":"rule topic meeting"}]] search the handbook`, "queue"); err != nil {
			return err
		}
		if err := send(prompt(ntok, delay, u.conv), "queue"); err != nil {
			return err
		}
		select {
		case id := <-u.approvals:
			if err := u.ws.call(ctx, protocol.Command{Op: protocol.OpApprove, ConversationID: u.conv, CallID: id, Decision: agent.DecisionApprove}, nil); err != nil {
				return err
			}
		case <-time.After(time.Minute):
			return fmt.Errorf("%s: no approval request after a minute", u.conv)
		case <-ctx.Done():
			return ctx.Err()
		}
		if u.rounds%3 == 2 { // a reconnect in the middle of the text turn
			time.Sleep(time.Duration(u.rng.Int64N(int64(time.Duration(ntok) * delay))))
			u.close()
			if err := u.connect(ctx); err != nil {
				return err
			}
			u.reconnects++
		}
		for range 2 {
			select {
			case <-u.ends:
			case <-time.After(time.Duration(ntok)*delay + 2*time.Minute):
				return fmt.Errorf("%s: a turn did not end", u.conv)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		u.rounds++
		time.Sleep(time.Duration(u.rng.Int64N(int64(time.Second)))) // a person reads
	}
	return nil
}

// check replays the user's conversation from its start and checks it
// against the rounds run and the text the live client read.
func (u *soakUser) check(ctx context.Context, ntok int) error {
	var (
		mu                   sync.Mutex
		last                 int64
		disorder, ends, asks int
		users, texts, tools  int
		text                 strings.Builder
		turn                 []string // the events since the last end, as "seq type"
		odd                  []string // the first turn with no user message
	)
	caught := make(chan struct{})
	var once sync.Once
	ws, err := dialWSWith(ctx, wsURL(u.t.URL(), "/agentik/ws"), func(f *frame, _ time.Time) {
		if f.Type == protocol.FrameCaughtUp {
			once.Do(func() { close(caught) })
			return
		}
		if f.Type != protocol.FrameEvent || f.Event == nil || f.Event.Kind != agent.KindConversation {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if f.Event.Seq <= last {
			disorder++
		}
		last = f.Event.Seq
		ev := f.Event.Event
		if ev.Type != agent.EventAppendText {
			turn = append(turn, fmt.Sprintf("%d %s", f.Event.Seq, ev.Type))
		}
		switch ev.Type {
		case agent.EventAppendText:
			text.WriteString(ev.Text)
		case agent.EventEnd:
			ends++
			if odd == nil && !slices.ContainsFunc(turn, func(s string) bool { return strings.HasSuffix(s, " "+agent.EventMessage+" "+agent.MessageUser) }) {
				odd = turn
			}
			turn = nil
		case agent.EventApprovalRequest:
			asks++
		case agent.EventMessage:
			if ev.Message == nil {
				break
			}
			var body strings.Builder
			for _, c := range ev.Message.Content {
				body.WriteString(c.Body)
			}
			turn[len(turn)-1] += " " + ev.Message.Type
			switch {
			case ev.Message.Type == agent.MessageUser:
				users++
			case ev.Message.Type == agent.MessageAssistant && body.String() == llmtest.Tokens(ntok):
				texts++
			case ev.Message.Type == agent.MessageAssistant && strings.HasPrefix(body.String(), "tool said: "):
				tools++
			}
		}
	}, skimNone, u.key)
	if err != nil {
		return err
	}
	defer ws.Close()
	if _, err := ws.subscribe(ctx, "conversation", u.conv, 0); err != nil {
		return err
	}
	if err := wait(ctx, caught, time.Minute, "soak replay"); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	u.mu.Lock()
	live, liveDisorder := u.text.String(), u.disorder
	u.mu.Unlock()
	r := u.rounds
	switch {
	case disorder > 0 || liveDisorder > 0:
		return fmt.Errorf("%s: %d events out of order in the log, %d in the live client", u.conv, disorder, liveDisorder)
	case users != 2*r || ends != 2*r || asks != r:
		return fmt.Errorf("%s: %d rounds, but %d user messages, %d ends, %d approval requests in the log; the first turn without a user message: %s", u.conv, r, users, ends, asks, strings.Join(odd, ", "))
	case texts != r || tools != r:
		return fmt.Errorf("%s: %d rounds, but %d whole text answers and %d file_search answers", u.conv, r, texts, tools)
	case live != text.String():
		return fmt.Errorf("%s: the live client read %d bytes of text across %d reconnects, the log holds %d", u.conv, len(live), u.reconnects, text.Len())
	}
	return nil
}
