package main

import (
	"bufio"
	"context"
	"encoding/json"
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

// killMidAnswer runs testdata/durable.mjs in phase against the real
// binary: once its clients saw the held answer, the binary is killed
// (SIGKILL) and started again with env, and the script reports.
func killMidAnswer(t *testing.T, phase string, turns int, after []llmtest.Reply, env ...string) (durableRun, *llmtest.Server, *proc) {
	t.Helper()
	const key = "sk-durable"
	fake, fakeURL := llmtest.NewHTTPServer(t)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	for range turns {
		fake.Enqueue(llmtest.Reply{Text: strings.Repeat("token ", 2000), HoldAfter: heldAfter, Hold: hold})
	}
	addr, db := freeAddr(t), filepath.Join(t.TempDir(), "agentik.db")
	base := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS=" + key, "AGENTIK_TITLES=first_line"}
	p := start(t, addr, db, base...)

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
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
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

// TestMCPCallAcrossKill9 kills the real binary while an ask_agentik call
// of the MCP SDK's client streams its answer: the client reconnects with
// its Last-Event-ID, the restart continues the turn, and the call
// returns the whole answer, its progress having carried each piece once.
func TestMCPCallAcrossKill9(t *testing.T) {
	t.Parallel()
	got, _, _ := killMidAnswer(t, "continued", 1, []llmtest.Reply{{Text: " and the rest."}})
	whole := heldText + " and the rest."
	if m := got.MCP; m.IsError || m.Thrown != "" || m.Text != whole || m.Progress != whole {
		t.Fatalf("the call across the kill: %+v; want %q, once in its progress", m, whole)
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
	got, _, _ := killMidAnswer(t, "failed", 2, nil, "AGENTIK_TURN_CONTINUATIONS=0")
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
