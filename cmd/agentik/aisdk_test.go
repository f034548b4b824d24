package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// frontEnd is the real binary with the fake model and the npm reference
// MCP server, whose get-sum tool waits for approval, for the front-end
// protocol tests.
func frontEnd(t *testing.T, key string, env ...string) *proc {
	t.Helper()
	root := repoRoot(t)
	entry := filepath.Join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("%s is missing: run `npm ci` in %s: %v", entry, root, err)
	}
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	conf := `{"mcpServers":{"everything":{"command":"node","args":["` + entry + `","stdio"],"requireApproval":{"always":["get-sum"]}}}}`
	if err := os.WriteFile(mcp, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	_, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), filepath.Join(dir, "agentik.db"),
		append([]string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG=" + mcp, "AGENTIK_API_KEYS=" + key}, env...)...)
	waitTools(t, p, map[string]string{"Authorization": "Bearer " + key})
	return p
}

// watchAll subscribes a WebSocket to every event and returns a channel of
// the conversation events of conversation id.
func watchAll(t *testing.T, ctx context.Context, p *proc, key, id string) <-chan *agent.Event {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/agentik/ws", &websocket.DialOptions{HTTPHeader: map[string][]string{"Authorization": {"Bearer " + key}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	ws.SetReadLimit(1 << 22)
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"op":"subscribe","id":"1","stream":"all"}`)); err != nil {
		t.Fatal(err)
	}
	evs := make(chan *agent.Event, 4096)
	go func() {
		defer close(evs)
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var f struct {
				Type  string
				Event *agent.AllEvent
			}
			if json.Unmarshal(b, &f) != nil || f.Type != "event" || f.Event == nil || f.Event.Event == nil || f.Event.ConversationID != id {
				continue
			}
			select {
			case evs <- f.Event.Event:
			default:
			}
		}
	}()
	return evs
}

// TestAISDK runs the AI SDK's own DefaultChatTransport and
// readUIMessageStream (testdata/aisdk.mjs) against the real binary: a
// streamed answer with reasoning and a server-side tool, a second message
// in the same chat, a drop mid-answer then reconnectToStream giving the
// whole message, 204 when nothing runs, an approval answered as
// addToolApprovalResponse does, a regenerate, and bad input refused with
// typed JSON errors and nothing stored. A WebSocket subscriber sees the
// chat's turns live.
func TestAISDK(t *testing.T) {
	const key = "sk-agentik-test"
	p := frontEnd(t, key)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const chat = "chat-aisdk-1"
	live := watchAll(t, ctx, p, key, chat)

	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "aisdk.mjs"))
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+p.addr, "AGENTIK_KEY="+key, "AGENTIK_CHAT="+chat)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\nagentik logs:\n%s", err, stderr.String(), p.logs)
	}
	type tool struct {
		Name, State string
		Input       map[string]any
		Output      any
	}
	type message struct {
		ID, Text, Reasoning string
		Tools               []tool
		Steps               int
		Usage               *struct{ InputTokens, OutputTokens, TotalTokens int }
	}
	type failure struct {
		Status        int
		Code, Message string
		Stored        int
	}
	var got struct {
		First, Second, Approved, Regenerated message
		Resumed                              *message
		ResumedBeforeDrop                    int `json:"resumed_before_drop"`
		Idle, Fresh                          any
		Asked                                struct{ State, Approval, Tool string }
		Bad                                  map[string]failure
		TransportError                       *struct {
			Status int
			Body   string
		} `json:"transport_error"`
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}

	f := got.First
	if !strings.HasPrefix(f.Reasoning, "Thinking about:") || !strings.Contains(f.Text, "ping from useChat") || f.Steps != 2 || f.Usage == nil || f.Usage.TotalTokens == 0 {
		t.Errorf("first answer %+v", f)
	}
	if len(f.Tools) != 1 || f.Tools[0].Name != "everything__echo" || f.Tools[0].State != "output-available" || f.Tools[0].Input["message"] != "ping from useChat" ||
		!strings.Contains(f.Tools[0].Output.(string), "ping from useChat") {
		t.Errorf("first answer's tool %+v", f.Tools)
	}
	if got.Second.Text != "You said: second message" || got.Second.ID == f.ID {
		t.Errorf("second answer %+v (first id %s)", got.Second, f.ID)
	}
	if got.Resumed == nil || got.Resumed.Text != llmtest.Tokens(150) || got.ResumedBeforeDrop < 3 {
		t.Errorf("resumed after a drop at %d deltas: %+v", got.ResumedBeforeDrop, got.Resumed)
	}
	if got.Idle != nil || got.Fresh != nil {
		t.Errorf("reconnect with nothing running gave %v (a new chat: %v), want null (204)", got.Idle, got.Fresh)
	}
	if got.Asked.State != "approval-requested" || got.Asked.Approval == "" || got.Asked.Tool != "everything__get-sum" {
		t.Errorf("approval request %+v", got.Asked)
	}
	if len(got.Approved.Tools) != 1 || got.Approved.Tools[0].State != "output-available" || !strings.Contains(got.Approved.Text, "tool said:") || !strings.Contains(got.Approved.Text, "5") {
		t.Errorf("approved answer %+v", got.Approved)
	}
	if got.Regenerated.Text != "You said: second message" {
		t.Errorf("regenerated %+v", got.Regenerated)
	}
	for name, want := range map[string]failure{
		"shape":              {Status: 400, Code: "bad_request", Stored: 404},
		"no_trigger":         {Status: 400, Code: "bad_request", Stored: 404},
		"regenerate_empty":   {Status: 400, Code: "bad_request", Stored: 404},
		"regenerate_unknown": {Status: 404, Code: "not_found", Stored: 404},
		"blank":              {Status: 400, Code: "bad_request", Stored: 404},
		"bad_id":             {Status: 400, Code: "bad_request"},
	} {
		g := got.Bad[name]
		if g.Status != want.Status || g.Code != want.Code || g.Stored != want.Stored || g.Message == "" {
			t.Errorf("bad input %s: got %+v, want %+v", name, g, want)
		}
	}
	if got.TransportError == nil || got.TransportError.Status != 400 || !strings.Contains(got.TransportError.Body, `"code":"bad_request"`) {
		t.Errorf("transport error %+v", got.TransportError)
	}

	// The chat's turns were live on the WebSocket: the first user message,
	// then its answer's text, then its end.
	var sawUser, sawTool bool
	for ev := range live {
		switch {
		case ev.Type == agent.EventMessage && ev.Message.Type == agent.MessageUser:
			sawUser = true
		case ev.Type == agent.EventToolResult && sawUser:
			sawTool = strings.Contains(ev.Result, "ping from useChat")
		}
		if ev.Type == agent.EventEnd && sawTool {
			break
		}
	}
	if !sawUser || !sawTool {
		t.Errorf("the WebSocket subscriber missed the chat's first turn: user %v, tool %v", sawUser, sawTool)
	}
}
