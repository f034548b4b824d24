package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/store"
)

// createConversation makes a conversation over REST and returns its id.
func (b *bench) createConversation(ctx context.Context, root, title string) (string, error) {
	return b.createConversationAs(ctx, root, title, "")
}

// createConversationAs is createConversation as the user of bearer key
// (none when key is "").
func (b *bench) createConversationAs(ctx context.Context, root, title, key string) (string, error) {
	body, _ := json.Marshal(map[string]string{"title": title})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"/agentik/conversations", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("create conversation: %w", err)
	}
	defer resp.Body.Close()
	var c agent.Conversation
	if resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("create conversation: %s: %s", resp.Status, msg)
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return "", fmt.Errorf("create conversation: %w", err)
	}
	return c.ID, nil
}

// createConversations makes n conversations over REST, titled
// title(i), conversation i as the user of bearer key(i) (nil: none), a
// few at once: one after the other, the 100 to 200 of a load's setup
// took a second of a run's wall time each time.
func (b *bench) createConversations(ctx context.Context, root string, n int, title func(int) string, key func(int) string) ([]string, error) {
	ids := make([]string, n)
	err := parallel(ctx, n, createWorkers, func(ctx context.Context, i int) error {
		k := ""
		if key != nil {
			k = key(i)
		}
		var err error
		ids[i], err = b.createConversationAs(ctx, root, title(i), k)
		return err
	})
	return ids, err
}

// createWorkers is how many conversations createConversations makes at
// once.
const createWorkers = 8

// router hands a connection's conversation events to the sink of their
// conversation; every other frame goes to other (may be nil).
type router struct {
	mu    sync.Mutex
	sinks map[string]*sink
	other func(*frame, time.Time)
}

func newRouter() *router { return &router{sinks: map[string]*sink{}} }

func (r *router) set(convID string, s *sink) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sinks[convID] = s
}

func (r *router) on(f *frame, at time.Time) {
	if f.Type == protocol.FrameEvent && f.Event != nil && f.Event.Kind == agent.KindConversation {
		r.mu.Lock()
		s := r.sinks[f.Event.ConversationID]
		r.mu.Unlock()
		if s != nil {
			s.add(&f.Event.Event, f.Event.Seq, at)
			return
		}
	}
	if r.other != nil {
		r.other(f, at)
	}
}

// sendTurn sends text to a conversation over ws and returns the seq of the
// user's message event.
func sendTurn(ctx context.Context, ws *wsClient, convID, text string) (int64, error) {
	var res protocol.SendResult
	err := ws.call(ctx, protocol.Command{Op: protocol.OpSend, ConversationID: convID, Content: []agent.Content{agent.Text(text)}}, &res)
	return res.Seq, err
}

// wait waits for ch or fails after d.
func wait(ctx context.Context, ch <-chan struct{}, d time.Duration, what string) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return fmt.Errorf("%s: nothing after %s", what, d)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// selfCPU is this process's CPU time, user and system, of every thread
// it ever had (getrusage counts exited threads, which a sum over
// /proc/self/task would lose, making a short measure read 0 or less).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		d, _ := cpuTime(os.Getpid())
		return d
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// relayModes are the relay rounds of each store mode, with the bare
// reads of the same rounds, that the relay scenario ran for the modes
// scenario (nil: none).
type relayModes struct {
	bareRate, bareCPU []float64
	runs              map[store.Mode][]relayRun
	dbs               map[store.Mode]string // the database each mode's agentik ran on
}

// relay: one stream at full speed, model → runner → event log → broker →
// one WebSocket client, against go-openai reading the fake directly. When
// the run has the modes scenario too, each round also streams the answer
// through an agentik of the store's other mode, the two modes' order
// alternated round by round, and keeps every round for modes: its relay
// rows are the same rounds (the bare read first in each, then the two
// modes) that it ran itself before, without a second bare read and
// environment-mode agentik of every round.
func (b *bench) relay(ctx context.Context) error {
	n := b.sz.RelayTokens
	rl, err := b.startRelay(ctx, "relay.db")
	if err != nil {
		return err
	}
	defer rl.close()
	mode := envMode()
	rls := map[store.Mode]*relayTarget{mode: rl}
	var rm *relayModes
	if b.want["modes"] && slices.Contains(storeModes, mode) {
		rm = &relayModes{runs: map[store.Mode][]relayRun{}, dbs: map[store.Mode]string{mode: "relay.db"}}
		for _, m := range storeModes {
			if m == mode {
				continue
			}
			db := "relay-" + string(m) + ".db"
			other, err := b.startRelay(ctx, db, modeEnv(m))
			if err != nil {
				return err
			}
			defer other.close()
			rls[m], rm.dbs[m] = other, db
		}
	}

	var bareRate, bareCPU, rate, cpu, srvCPU, events, lateEarly []float64
	for round := range b.sz.RelayRounds {
		// Bare: go-openai reads the fake directly.
		r, c, err := b.direct(ctx, n, fmt.Sprintf("relay-bare-%d", round))
		if err != nil {
			return err
		}
		bareRate, bareCPU = append(bareRate, r), append(bareCPU, c)
		order := []store.Mode{mode}
		if rm != nil {
			order = slices.Clone(storeModes)
			if round%2 == 1 { // a drift in the machine's load weighs on both
				slices.Reverse(order)
			}
		}
		var res relayRun
		for _, m := range order {
			got, err := b.relayOnce(ctx, rls[m], n)
			if err != nil {
				if rm != nil {
					err = fmt.Errorf("%s mode: %w", m, err)
				}
				return err
			}
			if rm != nil {
				rm.runs[m] = append(rm.runs[m], got)
			}
			if m == mode {
				res = got
			}
		}
		rate, cpu, srvCPU = append(rate, res.rate), append(cpu, res.cpu), append(srvCPU, res.srvCPU)
		events, lateEarly = append(events, res.events), append(lateEarly, res.lateEarly)
		b.progress("relay round %d: bare %.0f tokens/s, agentik %.0f tokens/s in %.0f events (text and resume exact)", round+1, r, res.rate, res.events)
		if rm != nil {
			b.progress("relay round %d for modes: fast %.0f, plain %.0f tokens/s", round+1, rm.runs[store.ModeFast][round].rate, rm.runs[store.ModePlain][round].rate)
		}
	}
	if rm != nil {
		rm.bareRate, rm.bareCPU = bareRate, bareCPU
		b.relayModes = rm
	}
	note := fmt.Sprintf("%d tokens, median of %d; %.0f append_text events (coalesced by the runner), text, persisted message and resume exact", n, b.sz.RelayRounds, median(events))
	b.add(Row{Scenario: "relay", Metric: "throughput, 1 stream → 1 WS client", Unit: "tokens/s", Bare: median(bareRate), Agentik: median(rate), Target: "≥ 0.25× bare", Note: note},
		func(r Row) bool { return r.Ratio >= 0.25 })
	b.add(Row{Scenario: "relay", Metric: "CPU per token, all processes", Unit: "µs", Bare: median(bareCPU), Agentik: median(cpu),
		Note: fmt.Sprintf("both include the fake model; agentik's own process: %.1f µs/token", median(srvCPU))}, nil)
	b.add(Row{Scenario: "relay", Metric: fmt.Sprintf("server CPU per token, late (70–90 %%) ÷ early (10–30 %%), %d-token answer at full speed", n), Unit: "×", Agentik: median(lateEarly),
		Target: "≤ 1.2×", Note: "1.00 is flat"}, func(r Row) bool { return r.Agentik <= 1.2 })
	return nil
}

// relayTarget is an agentik the relay's rounds run on, with the one
// WebSocket client that sends and watches.
type relayTarget struct {
	t  target
	ws *wsClient
	rt *router
}

func (r *relayTarget) close() {
	r.ws.Close()
	r.t.Close()
}

// startRelay starts agentik on db (env added to its environment) and
// connects the relay's client.
func (b *bench) startRelay(ctx context.Context, db string, env ...string) (*relayTarget, error) {
	t, err := b.agentik(ctx, db, env...)
	if err != nil {
		return nil, err
	}
	rt := newRouter()
	ws, err := dialWS(ctx, wsURL(t.URL(), "/agentik/ws"), rt.on)
	if err != nil {
		t.Close()
		return nil, err
	}
	return &relayTarget{t: t, ws: ws, rt: rt}, nil
}

// relayRun is one relay round's figures.
type relayRun struct {
	rate      float64 // tokens/s
	cpu       float64 // µs per token, the server's and this process's
	srvCPU    float64 // µs per token, the server's
	events    float64 // append_text events
	lateEarly float64 // the server's CPU per token late ÷ early
}

// relayOnce streams one n-token answer at full speed through a new
// conversation of rl and checks the text, the persisted message and a
// resume.
func (b *bench) relayOnce(ctx context.Context, rl *relayTarget, n int) (relayRun, error) {
	var res relayRun
	want := llmtest.Tokens(n)
	t := rl.t
	id, err := b.createConversation(ctx, t.URL(), "relay")
	if err != nil {
		return res, err
	}
	s := newSink(id, nil)
	cm := newCPUMarks(t, n)
	s.onTokens = cm.see
	rl.rt.set(id, s)
	if _, err := rl.ws.subscribe(ctx, "conversation", id, -1); err != nil {
		return res, err
	}
	c0, s0, t0 := selfCPU(), t.CPU(), time.Now()
	seq, err := sendTurn(ctx, rl.ws, id, prompt(n, 0, id))
	if err != nil {
		return res, err
	}
	if err := wait(ctx, s.done, 2*time.Minute, "relay end"); err != nil {
		return res, err
	}
	el := time.Since(t0)
	dSrv, dSelf := t.CPU()-s0, selfCPU()-c0
	if b.inproc {
		dSelf = 0 // the server's CPU is this process's
	}
	if got := s.text.String(); got != want {
		return res, fmt.Errorf("relay: the streamed text differs from the model's (%d bytes, want %d)", len(got), len(want))
	}
	if s.msgText != want {
		return res, fmt.Errorf("relay: the persisted assistant message differs from the model's text (%d bytes, want %d)", len(s.msgText), len(want))
	}
	if err := b.checkResume(ctx, t.URL(), id, seq-1, want); err != nil {
		return res, err
	}
	early, late := cm.perToken()
	return relayRun{
		rate: float64(n) / el.Seconds(), cpu: float64((dSrv + dSelf).Microseconds()) / float64(n), srvCPU: float64(dSrv.Microseconds()) / float64(n),
		events: float64(s.events), lateEarly: late / early,
	}, nil
}

// direct reads an n-token answer from the fake with go-openai and returns
// tokens/s and this process's CPU µs per token.
func (b *bench) direct(ctx context.Context, n int, key string) (rate, cpuPerToken float64, err error) {
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = b.fake.URL
	cfg.HTTPClient = b.hc
	client := openai.NewClientWithConfig(cfg)
	c0, t0 := selfCPU(), time.Now()
	st, err := client.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model: "fake-model", Stream: true,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: prompt(n, 0, key)}},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("direct stream: %w", err)
	}
	defer st.Close()
	var sb strings.Builder
	for {
		resp, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, 0, fmt.Errorf("direct stream: %w", err)
		}
		if len(resp.Choices) > 0 {
			sb.WriteString(resp.Choices[0].Delta.Content)
		}
	}
	el, c := time.Since(t0), selfCPU()-c0
	if sb.String() != llmtest.Tokens(n) {
		return 0, 0, fmt.Errorf("direct stream: text differs (%d bytes)", sb.Len())
	}
	return float64(n) / el.Seconds(), float64(c.Microseconds()) / float64(n), nil
}

// checkResume subscribes on a new connection with after and checks that
// the replayed text up to caught_up is want.
func (b *bench) checkResume(ctx context.Context, root, convID string, after int64, want string) error {
	s := newSink(convID, nil)
	ws, err := dialWS(ctx, wsURL(root, "/agentik/ws"), func(f *frame, at time.Time) {
		switch {
		case f.Type == protocol.FrameEvent && f.Event != nil:
			s.add(&f.Event.Event, f.Event.Seq, at)
		case f.Type == protocol.FrameCaughtUp:
			s.caughtUp(f.Seq)
		}
	})
	if err != nil {
		return err
	}
	defer ws.Close()
	if _, err := ws.subscribe(ctx, "conversation", convID, after); err != nil {
		return err
	}
	if err := wait(ctx, s.caught, time.Minute, "resume caught_up"); err != nil {
		return err
	}
	if got := s.text.String(); got != want || s.disorder > 0 {
		return fmt.Errorf("resume after %d: text of %d bytes (want %d), %d events out of order", after, len(got), len(want), s.disorder)
	}
	return nil
}
