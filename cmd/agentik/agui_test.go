package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestAGUI runs AG-UI's own HttpAgent (@ag-ui/client, testdata/agui.mjs)
// against the real binary: a run with reasoning, a second run on the
// thread, a server-side MCP tool as tool-call events, an approval as an
// interrupt that a new message cannot skip and a resume answers, and bad
// input as RUN_ERROR with nothing stored. A WebSocket subscriber sees the
// thread's turns live.
func TestAGUI(t *testing.T) {
	t.Parallel()
	const key = "sk-agentik-test"
	p := frontEnd(t, key)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const thread = "thread-agui-1"
	live := watchAll(t, ctx, p, key, thread)

	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "agui.mjs"))
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+p.addr, "AGENTIK_KEY="+key, "AGENTIK_THREAD="+thread)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\nagentik logs:\n%s", err, stderr.String(), p.logs)
	}
	type runSeen struct {
		Types           []string
		Text, Reasoning string
		Tools, Results  []string
		Error           *struct{ Message, Code string }
		Outcome         string
		Interrupts      []struct{ ID, Reason, ToolCallID string }
		Snapshot        []string
		Thrown          string
		Messages        []string
		LastAnswer      string `json:"last_answer"`
	}
	type rawRun struct {
		Status int
		Events []struct{ Type, Code, Message string }
	}
	var got struct {
		First, Second, Tool, Interrupted, Blocked, Resumed, Replayed runSeen
		DroppedAfter                                                 int     `json:"dropped_after"`
		ClientError                                                  runSeen `json:"client_error"`
		Pending                                                      []struct {
			ID, Reason string
			ToolCallID string `json:"tool_call_id"`
		}
		Bad    map[string]rawRun
		Stored map[string]int
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	f := got.First
	if len(f.Types) < 4 || f.Types[0] != "RUN_STARTED" || f.Types[1] != "MESSAGES_SNAPSHOT" || f.Types[len(f.Types)-1] != "RUN_FINISHED" ||
		!slices.Contains(f.Types, "REASONING_MESSAGE_CONTENT") || !slices.Contains(f.Types, "TEXT_MESSAGE_END") {
		t.Errorf("first run's events %v", f.Types)
	}
	if f.Text != "You said: hello ag-ui" || !strings.HasPrefix(f.Reasoning, "Thinking about:") || f.Outcome != "success" || f.Error != nil || f.Thrown != "" {
		t.Errorf("first run %+v", f)
	}
	s := got.Second
	if s.Text != "You said: second run" || !slices.Equal(s.Snapshot, []string{"user", "assistant", "user"}) {
		t.Errorf("second run: text %q, snapshot %v", s.Text, s.Snapshot)
	}
	if n := strings.Count(strings.Join(s.Messages, " "), "user"); n != 2 {
		t.Errorf("after the second run the client holds %v: want its 2 user messages once each", s.Messages)
	}
	tl := got.Tool
	if !slices.Equal(tl.Tools, []string{"everything__echo"}) || len(tl.Results) != 1 || !strings.Contains(tl.Results[0], "ping from ag-ui") ||
		!strings.Contains(tl.Text, "tool said:") || !slices.Contains(tl.Types, "TOOL_CALL_ARGS") || !slices.Contains(tl.Types, "TOOL_CALL_END") {
		t.Errorf("tool run %+v", tl)
	}
	rp := got.Replayed
	if got.DroppedAfter < 3 || rp.LastAnswer != llmtest.Tokens(150) || rp.Outcome != "success" || strings.Count(strings.Join(rp.Messages, " "), "assistant") != 1 {
		t.Errorf("replay after a drop at %d deltas: answer %.60q…, outcome %q, client messages %v", got.DroppedAfter, rp.LastAnswer, rp.Outcome, rp.Messages)
	}
	in := got.Interrupted
	if in.Outcome != "interrupt" || len(in.Interrupts) != 1 || in.Interrupts[0].Reason != "tool_call" || in.Interrupts[0].ToolCallID == "" ||
		!slices.Equal(in.Tools, []string{"everything__get-sum"}) || len(in.Results) != 0 {
		t.Errorf("interrupted run %+v", in)
	}
	if len(got.Pending) != 1 || got.Pending[0].ID != in.Interrupts[0].ID {
		t.Errorf("pending interrupts %+v", got.Pending)
	}
	if !strings.Contains(got.Blocked.Thrown, "pending interrupt") {
		t.Errorf("a new message while an interrupt is open: %+v", got.Blocked)
	}
	rs := got.Resumed
	if rs.Outcome != "success" || len(rs.Results) != 1 || !strings.Contains(rs.Results[0], "5") || !strings.Contains(rs.Text, "tool said:") || slices.Contains(rs.Types, "TOOL_CALL_START") {
		t.Errorf("resumed run %+v", rs)
	}
	for name, code := range map[string]string{"shape": "bad_request", "no_thread": "bad_request", "unknown_resume": "not_found", "bad_payload": "bad_request", "blank": "bad_request"} {
		b := got.Bad[name]
		if b.Status != 200 || len(b.Events) != 1 || b.Events[0].Type != "RUN_ERROR" || b.Events[0].Code != code || b.Events[0].Message == "" {
			t.Errorf("bad input %s: %+v, want one RUN_ERROR %s", name, b, code)
		}
	}
	for name, st := range got.Stored {
		if st != 404 {
			t.Errorf("bad input %s stored a conversation (%d)", name, st)
		}
	}
	if got.ClientError.Error == nil || got.ClientError.Error.Code != "bad_request" {
		t.Errorf("the client's view of a RUN_ERROR: %+v", got.ClientError)
	}

	// The thread's first turn was live on the WebSocket.
	var text strings.Builder
	for ev := range live {
		if ev.Type == agent.EventAppendText {
			text.WriteString(ev.Text)
		}
		if ev.Type == agent.EventEnd {
			break
		}
	}
	if !strings.Contains(text.String(), "You said: hello ag-ui") {
		t.Errorf("the WebSocket subscriber saw %q", text.String())
	}
}
