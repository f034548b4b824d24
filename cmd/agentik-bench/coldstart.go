package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/store"
)

// coldStartRounds is how many times each start is measured (the median
// is reported).
const coldStartRounds = 3

// coldstart: from exec to the server's "listening" log line (it serves
// from then on: /ready is checked to answer right after), with an empty
// database (every migration runs) and with one of ColdStartEvents events
// written through the store as turns write them. The bare baseline of the
// empty start is the bare relay's exec to its listening line (a Go binary
// with no database); the filled database's is the empty one's.
func (b *bench) coldstart(ctx context.Context) error {
	if b.bin == "" {
		b.progress("coldstart: skipped: it needs the agentik binary, not agentik in this process")
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var bare, empty, filled, emptyReady, filledReady []float64
	for i := range coldStartRounds {
		cmd := exec.Command(exe)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), roleEnv + "=bare", "OPENAI_BASE_URL=" + b.fake.URL}
		d, _, err := b.timeStart(ctx, cmd, "", func(line string) bool { return strings.HasPrefix(line, "listening ") }, true)
		if err != nil {
			return fmt.Errorf("coldstart, bare: %w", err)
		}
		bare = append(bare, ms(d))
		d, r, err := b.timeAgentikStart(ctx, filepath.Join(b.dir, fmt.Sprintf("coldstart-empty-%d.db", i)))
		if err != nil {
			return fmt.Errorf("coldstart, empty database: %w", err)
		}
		empty, emptyReady = append(empty, ms(d)), append(emptyReady, ms(r))
	}
	n := b.coldEvents
	path := filepath.Join(b.dir, "coldstart-filled.db")
	t0 := time.Now()
	convs, err := b.fill(ctx, path, n)
	if err != nil {
		return fmt.Errorf("coldstart: fill: %w", err)
	}
	built := time.Since(t0)
	b.progress("coldstart: %d events in %d conversations written in %.1f s", n, convs, built.Seconds())
	for range coldStartRounds {
		d, r, err := b.timeAgentikStart(ctx, path)
		if err != nil {
			return fmt.Errorf("coldstart, %d events: %w", n, err)
		}
		filled, filledReady = append(filled, ms(d)), append(filledReady, ms(r))
	}
	b.progress("coldstart: exec → listening: bare %v, empty %v, %d events %v ms", bare, empty, n, filled)
	mode := envMode()
	b.add(Row{Scenario: "coldstart", Metric: "exec → listening, empty database (every migration)", Unit: "ms", Bare: median(bare), Agentik: median(empty),
		Note: fmt.Sprintf("median of %d (%s); /ready answered 200 %.0f ms after exec; bare: the bare relay's exec → its listening line; store mode %s", coldStartRounds, list(empty), median(emptyReady), mode)}, nil)
	b.add(Row{Scenario: "coldstart", Metric: fmt.Sprintf("exec → listening, database of %d events (bare: the empty database)", n), Unit: "ms", Bare: median(empty), Agentik: median(filled),
		Note: fmt.Sprintf("median of %d (%s; the first is the first open since the bench wrote it); /ready 200 after %.0f ms; %d conversations of %d-event turns, %.0f MB with its side files, written in %.1f s (-coldstart-events)",
			coldStartRounds, list(filled), median(filledReady), convs, fillTurnEvents, float64(dirBytes(path))/1e6, built.Seconds())}, nil)
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// list prints figures with a comma between.
func list(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = num(x)
	}
	return strings.Join(s, ", ")
}

// dirBytes is the size of the database at path and of every file beside
// it whose name starts with its name (the WAL, the delta log).
func dirBytes(path string) int64 {
	var n int64
	_ = filepath.Walk(filepath.Dir(path), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.HasPrefix(p, path) {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// timeAgentikStart times the agentik binary's start on the SQLite
// database at path: exec → its "listening" log line, and exec → the first
// /ready that answers 200.
func (b *bench) timeAgentikStart(ctx context.Context, path string) (listening, ready time.Duration, err error) {
	addr, err := freeAddr()
	if err != nil {
		return 0, 0, err
	}
	cmd := agentikCmd(b.bin, addr, "sqlite:"+path, b.dir, b.fake.URL, "info")
	return b.timeStart(ctx, cmd, "http://"+addr, isListening, false)
}

// isListening is agentik's "listening" log line, as text or JSON.
func isListening(line string) bool {
	return strings.Contains(line, "msg=listening ") || strings.Contains(line, `"msg":"listening"`)
}

// timeStart starts cmd and times from exec to the first line of its
// stderr (stdout when onStdout) that done accepts; then, when url is set,
// to the first GET url/ready that answers 200. It stops the process.
func (b *bench) timeStart(ctx context.Context, cmd *exec.Cmd, url string, done func(string) bool, onStdout bool) (listening, ready time.Duration, err error) {
	var out io.ReadCloser
	if onStdout {
		out, err = cmd.StdoutPipe()
	} else {
		out, err = cmd.StderrPipe()
	}
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait() // closes out
	}()
	lines := make(chan string, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if done(sc.Text()) {
				lines <- sc.Text()
				break
			}
		}
		_, _ = io.Copy(io.Discard, out) // the rest, until the process ends
	}()
	var seen []string
	select {
	case line, ok := <-lines:
		if !ok {
			return 0, 0, errors.New("exited before it listened")
		}
		seen = append(seen, line)
		listening = time.Since(t0)
	case <-time.After(5 * time.Minute):
		return 0, 0, errors.New("no listening line after 5 minutes")
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	if url == "" {
		return listening, 0, nil
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/ready", nil)
		resp, err := b.hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return listening, time.Since(t0), nil
			}
		}
		if time.Since(t0) > listening+30*time.Second {
			return 0, 0, fmt.Errorf("/ready not 200 30 s after %q: %v", seen, err)
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// fillTurnEvents is how many events one turn of the filled database has:
// the user's message, 50 text deltas, the answer, turn_ended, end.
const fillTurnEvents = 54

// fill writes about n events into a new database at path through the
// store (in the environment's mode), as turns write them: conversations
// of 10 turns, each turn one request, from fillWriters goroutines at once
// (the writer groups their commits, as it groups turns'). It returns the
// conversations made.
func (b *bench) fill(ctx context.Context, path string, n int) (int, error) {
	st, err := store.Open(ctx, "sqlite:"+path, store.Options{})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	var written, convs atomic.Int64
	err = parallel(ctx, fillWriters, fillWriters, func(ctx context.Context, _ int) error {
		for written.Load() < int64(n) {
			recs := fillConversation(int(convs.Add(1)))
			for len(recs) > 0 && written.Load() < int64(n) {
				turn := recs[0]
				recs = recs[1:]
				if err := st.Append(ctx, turn...); err != nil {
					return err
				}
				written.Add(int64(len(turn)))
			}
		}
		return nil
	})
	return int(convs.Load()), err
}

// fillWriters is how many goroutines write the filled database.
const fillWriters = 4

// fillConversation is the records of one conversation of the filled
// database, one request a turn: its creation with the first turn, then 9
// more turns.
func fillConversation(num int) [][]*agent.Record {
	const turnsPer = 10
	now := time.Now()
	text := func(s string) []agent.Content { return []agent.Content{agent.Text(s)} }
	cid := agent.NewID()
	ev := func(e *agent.Event) *agent.Record {
		return &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: now, ConversationID: cid, Event: e}}
	}
	title := fmt.Sprintf("conversation %d", num)
	turns := make([][]*agent.Record, turnsPer)
	turns[0] = []*agent.Record{{
		Event:        agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), Date: now, ConversationID: cid, Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: cid, Title: title}},
		Conversation: &agent.Conversation{ID: cid, Title: title, CreatedAt: now, UpdatedAt: now},
	}}
	for turn := range turnsPer {
		question := fmt.Sprintf("question %d", turn)
		user := ev(&agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageUser, ID: agent.NewID(), ConversationID: cid, Content: text(question)}})
		user.Turn = agent.TurnStart
		user.Memory = []agent.ModelMessage{{Role: agent.RoleUser, Content: text(question)}}
		recs := append(turns[turn], user)
		var answer strings.Builder
		for k := 1; k <= fillTurnEvents-4; k++ {
			tok := fmt.Sprintf(" t%d", k)
			answer.WriteString(tok)
			recs = append(recs, ev(&agent.Event{Type: agent.EventAppendText, Text: tok}))
		}
		msg := ev(&agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageAssistant, ID: agent.NewID(), ConversationID: cid, Content: text(answer.String())}})
		msg.Memory = []agent.ModelMessage{{Role: agent.RoleAssistant, Content: text(answer.String())}}
		turns[turn] = append(recs, msg,
			&agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), Date: now, ConversationID: cid, Agent: &agent.AgentEvent{Type: agent.AgentTurnEnded, ConversationID: cid}}, Turn: agent.TurnEnd},
			ev(&agent.Event{Type: agent.EventEnd}))
	}
	return turns
}
