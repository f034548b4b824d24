package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// durableRun is what testdata/durable.mjs saw.
type durableRun struct {
	MCP struct {
		Text, Progress string
		IsError        bool
		Thrown         string
		Structured     struct {
			ConversationID string `json:"conversation_id"`
		}
		AfterRestartMS int `json:"after_restart_ms"`
	}
	Resumed *struct {
		Types       []string
		Text, Error string
	}
	AGUI struct {
		Types   []string
		Error   *struct{ Message, Code string }
		Outcome any
		Thrown  string
	}
}

// stopMidAnswer runs testdata/durable.mjs in phase against the real
// binary (started with first): once its clients saw the held answer, the
// binary gets sig (and exits), the model gets the replies after, the
// binary starts again with env, and the script reports.
func stopMidAnswer(t *testing.T, phase string, turns int, sig syscall.Signal, first []string, after []llmtest.Reply, env ...string) (durableRun, *llmtest.Server, *proc) {
	t.Helper()
	const key = "sk-durable"
	fake, fakeURL := llmtest.NewHTTPServer(t)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	for range turns {
		fake.Enqueue(llmtest.Reply{Text: strings.Repeat("token ", 2000), HoldAfter: heldAfter, Hold: hold})
	}
	addr, db := freeAddr(t), filepath.Join(t.TempDir(), "agentik.db")
	base := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS=" + key}
	p := start(t, addr, db, append(base, first...)...)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "durable.mjs"))
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+addr, "AGENTIK_KEY="+key, "HELD="+heldText, "PHASE="+phase)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"streaming":true`) {
		t.Fatalf("node: %q %v\n%s\nagentik logs:\n%s", lines.Text(), lines.Err(), stderr.String(), p.logs)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	for _, r := range after {
		fake.Enqueue(r)
	}
	p = start(t, addr, db, append(base, env...)...)
	_, _ = stdin.Write([]byte("restarted\n"))
	if !lines.Scan() {
		t.Fatalf("node: %v\n%s\nagentik logs:\n%s", lines.Err(), stderr.String(), p.logs)
	}
	var got durableRun
	if err := json.Unmarshal(lines.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, lines.Bytes())
	}
	_ = cmd.Wait()
	return got, fake, p
}

// TestMCPCallAcrossRestart stops the real binary (SIGTERM, a drain
// shorter than the turn) while an ask_agentik call of the MCP SDK's
// client streams its answer: the call's stream ends without a result, the
// client reconnects with its Last-Event-ID, the restart continues the
// turn, and the call returns the whole answer, its progress having
// carried each piece once. (After a kill -9 the client reconnects the
// same way: TestProjectionsAcrossKill9NotContinued.)
func TestMCPCallAcrossRestart(t *testing.T) {
	t.Parallel()
	got, _, _ := stopMidAnswer(t, "continued", 1, syscall.SIGTERM, []string{"AGENTIK_DRAIN_TIMEOUT=0"}, []llmtest.Reply{{Text: " and the rest."}})
	whole := heldText + " and the rest."
	if m := got.MCP; m.IsError || m.Thrown != "" || m.Text != whole || m.Progress != whole {
		t.Fatalf("the call across the restart: %+v; want %q, once in its progress", m, whole)
	}
}

// TestProjectionsAcrossKill9NotContinued kills the real binary while an
// MCP call and an AI SDK chat stream, and starts it again with turn
// continuations off: each turn ends interrupted_by_restart, and every
// client learns it at once through its own resume: the MCP call returns
// the error (not a hang to its timeout), the AI SDK's reconnectToStream
// streams the turn again to its error chunk (not a silent 204), and an
// AG-UI run without input on the chat's thread is a RUN_ERROR (not
// RUN_FINISHED).
func TestProjectionsAcrossKill9NotContinued(t *testing.T) {
	t.Parallel()
	got, _, _ := stopMidAnswer(t, "failed", 2, syscall.SIGKILL, nil, nil, "AGENTIK_TURN_CONTINUATIONS=0")
	m := got.MCP
	if !m.IsError || !strings.Contains(m.Text, agent.CodeInterruptedByRestart) || !strings.HasPrefix(m.Text, heldText) || m.Progress != heldText {
		t.Errorf("the MCP call: %+v; want its kept text, then the error", m)
	}
	if m.AfterRestartMS > 10000 {
		t.Errorf("the MCP call returned %d ms after the restart; want at once", m.AfterRestartMS)
	}
	if r := got.Resumed; r == nil || r.Text != heldText || !strings.Contains(r.Error, "restarted") || r.Types[len(r.Types)-1] != "finish" {
		t.Errorf("the AI SDK's reconnectToStream: %+v; want the kept text, the error, the finish", r)
	}
	if a := got.AGUI; a.Error == nil || a.Error.Code != agent.CodeInterruptedByRestart || a.Outcome != nil {
		t.Errorf("the AG-UI run on the thread: %+v; want RUN_ERROR %s", a, agent.CodeInterruptedByRestart)
	}
}

// TestRollingRestartHandsOver is a rolling restart of two binaries on one
// PostgreSQL: while several turns stream on A, A gets SIGTERM with a
// drain shorter than the turns. A hands them over and B continues them at
// once (not at its 30 s recovery tick, which this test does not live to
// see): every turn completes with its whole answer, a client that
// followed each turn on B saw it once, and each client of A, whose
// stream ended with A, resumes on B from its Last-Event-ID and sees the
// rest once.
func TestRollingRestartHandsOver(t *testing.T) {
	t.Parallel()
	const turns = 10
	dsn := freshSchema(t)
	fake, fakeURL := llmtest.NewHTTPServer(t)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake"}
	a := startDSN(t, dsn, append(env, "AGENTIK_DRAIN_TIMEOUT=0")...)
	b := startDSN(t, dsn, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()

	type client struct {
		conv       agent.Conversation
		onA, onB   *bufio.Scanner
		ids        []string
		sawA, sawB string
		last       string
	}
	cs := make([]*client, turns)
	for i := range cs {
		c := &client{}
		cs[i] = c
		fake.Enqueue(llmtest.Reply{Text: strings.Repeat("token ", 2000), HoldAfter: heldAfter, Hold: hold})
		postJSON(t, a.url("/agentik/conversations"), `{}`, &c.conv)
		req, _ := http.NewRequestWithContext(ctx, "GET", b.url("/agentik/conversations/"+c.conv.ID+"/events"), nil)
		watch, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { watch.Body.Close() })
		c.onB = bufio.NewScanner(watch.Body)
		req, _ = http.NewRequestWithContext(ctx, "POST", a.url("/agentik/conversations/"+c.conv.ID+"/send"), strings.NewReader(`{"content":[{"type":"text","body":"talk"}]}`))
		req.Header.Set("Content-Type", "application/json")
		send, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { send.Body.Close() })
		c.onA = bufio.NewScanner(send.Body)
	}
	for _, c := range cs {
		c.ids, c.sawA, c.last = sseText(t, c.onA, heldText)
		_, c.sawB, _ = sseText(t, c.onB, heldText)
	}
	for range turns {
		fake.Enqueue(llmtest.Reply{Text: " and the rest."})
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("A's exit: %v\n%s", err, a.logs)
	}
	whole := heldText + " and the rest."
	for _, c := range cs {
		// B's client: the same stream goes on to the end.
		if _, rest, _ := sseText(t, c.onB, ""); c.sawB+rest != whole {
			t.Errorf("B's client of %s saw %q", c.conv.ID, tail(c.sawB+rest, 80))
		}
		// A's client resumes on B.
		req, _ := http.NewRequestWithContext(ctx, "GET", b.url("/agentik/conversations/"+c.conv.ID+"/events"), nil)
		req.Header.Set("Last-Event-ID", c.last)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		more, rest, _ := sseText(t, bufio.NewScanner(resp.Body), "")
		resp.Body.Close()
		if c.sawA+rest != whole {
			t.Errorf("A's client of %s saw %q then, resuming on B, %q", c.conv.ID, tail(c.sawA, 40), rest)
		}
		seen := map[string]bool{}
		for _, id := range append(c.ids, more...) {
			if seen[id] {
				t.Errorf("event %s reached A's client of %s twice", id, c.conv.ID)
			}
			seen[id] = true
		}
		var hist struct{ Messages []agent.Message }
		getJSON(t, b.url("/agentik/conversations/"+c.conv.ID+"/messages"), &hist)
		if last := hist.Messages[len(hist.Messages)-1]; last.Type != agent.MessageAssistant || last.Interrupted || last.Content[0].Body != whole {
			t.Errorf("%s's last message: %+v", c.conv.ID, last)
		}
	}
	if !strings.Contains(b.logs.String(), "msg=turn_continued") {
		t.Errorf("B logged no continued turn:\n%s", tail(b.logs.String(), 2000))
	}
}
