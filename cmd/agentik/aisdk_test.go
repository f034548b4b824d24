package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	p, _ := frontEndRestartable(t, key, env...)
	return p
}

// frontEndRestartable is frontEnd with a restart: the binary again on the
// same address and database (after the test killed it).
func frontEndRestartable(t *testing.T, key string, env ...string) (*proc, func() *proc) {
	t.Helper()
	p, restart, _ := frontEndFake(t, key, env...)
	return p, restart
}

// frontEndFake is frontEndRestartable with the fake model it answers with.
func frontEndFake(t *testing.T, key string, env ...string) (*proc, func() *proc, *llmtest.Server) {
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
	fake, fakeURL := llmtest.NewHTTPServer(t)
	addr, db := freeAddr(t), filepath.Join(dir, "agentik.db")
	env = append([]string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG=" + mcp, "AGENTIK_API_KEYS=" + key}, env...)
	run := func() *proc {
		p := start(t, addr, db, env...)
		waitToolStateAs(t, p, key, "everything", agent.ToolServerReady) // its first start, on an event
		return p
	}
	return run(), run, fake
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
// readUIMessageStream (testdata/aisdk.mjs) against the real binary, with
// both major versions apps use (ai 7, and ai 6 under the npm alias ai6,
// whose stream validation refuses chunk types and finish reasons it does
// not know): a streamed answer with reasoning and a server-side tool, a
// second message in the same chat, a drop mid-answer then
// reconnectToStream giving the whole message, 204 when nothing runs, an
// approval answered as addToolApprovalResponse does, a regenerate, and bad
// input refused with typed JSON errors and nothing stored. A WebSocket
// subscriber sees the chat's turns live.
func TestAISDK(t *testing.T) {
	t.Parallel()
	const key = "sk-agentik-test"
	p := frontEnd(t, key)
	for _, pkg := range []string{"ai", "ai6"} {
		t.Run(pkg, func(t *testing.T) { testAISDK(t, p, key, pkg) })
	}
}

func testAISDK(t *testing.T, p *proc, key, pkg string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	chat := "chat-" + pkg + "-1"
	live := watchAll(t, ctx, p, key, chat)

	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "aisdk.mjs"))
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+p.addr, "AGENTIK_KEY="+key, "AGENTIK_CHAT="+chat, "AI_PACKAGE="+pkg)
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
		ApprovedAgain                        struct {
			OK            bool
			Parts, Before int
			Error         string
		} `json:"approved_again"`
		Bad            map[string]failure
		TransportError *struct {
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
	if a := got.ApprovedAgain; !a.OK || a.Parts != a.Before {
		t.Errorf("an approval sent again: %+v, want the stream to end with nothing new", a)
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
	if got.TransportError == nil || got.TransportError.Status != 400 && pkg != "ai6" || !strings.Contains(got.TransportError.Body, `"code":"bad_request"`) {
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

// chunks posts (or, with an empty body, GETs) url and reads the UI message
// stream to its end: the chunks' types, and the tool call ids asked for
// approval.
func chunks(t *testing.T, method, url, key, body string) (types []string, asked []string, status int) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct{ Type, ToolCallID, FinishReason string }
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		typ := c.Type
		if c.FinishReason != "" {
			typ += ":" + c.FinishReason
		}
		types = append(types, typ)
		if c.Type == "tool-approval-request" {
			asked = append(asked, c.ToolCallID)
		}
	}
	return types, asked, resp.StatusCode
}

// aguiRun posts an AG-UI run and returns its events' types (RUN_FINISHED
// with its outcome) and the interrupt ids.
func aguiRun(t *testing.T, p *proc, key, body string) (types []string, interrupts []string) {
	t.Helper()
	req, _ := http.NewRequest("POST", p.url("/agentik/ag-ui"), strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var e struct {
			Type    string
			Outcome *struct {
				Type       string
				Interrupts []struct{ ID string }
			}
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		typ := e.Type
		if e.Outcome != nil {
			typ += ":" + e.Outcome.Type
			for _, in := range e.Outcome.Interrupts {
				interrupts = append(interrupts, in.ID)
			}
		}
		types = append(types, typ)
	}
	return types, interrupts
}

// TestApprovalsAcrossKill9: a turn that waits for approval, started over
// the AI SDK or AG-UI, is still there after kill -9 and a restart: the
// resume replays it up to the approval request (the AI SDK's GET, an AG-UI
// run without input), and answering it runs the tool and streams the rest.
func TestApprovalsAcrossKill9(t *testing.T) {
	t.Parallel()
	const key = "sk-agentik-test"
	p, restart := frontEndRestartable(t, key)
	api := p.url("/agentik/ai-sdk/chat")
	types, asked, st := chunks(t, "POST", api, key, `{"id":"chat-kill","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"[[tool=everything__get-sum args={\"a\":2,\"b\":3}]]"}]}]}`)
	if st != 200 || len(asked) != 1 || types[len(types)-1] != "finish:tool-calls" {
		t.Fatalf("before the kill: %d %v", st, types)
	}
	run, ins := aguiRun(t, p, key, `{"threadId":"thread-kill","runId":"r1","messages":[{"id":"m1","role":"user","content":"[[tool=everything__get-sum args={\"a\":4,\"b\":5}]]"}]}`)
	if len(ins) != 1 || run[len(run)-1] != "RUN_FINISHED:interrupt" {
		t.Fatalf("AG-UI before the kill: %v", run)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	p = restart()
	replayed, again, st := chunks(t, "GET", p.url("/agentik/ai-sdk/chat/chat-kill/stream"), key, "")
	if st != 200 || strings.Join(replayed, " ") != strings.Join(types, " ") || len(again) != 1 || again[0] != asked[0] {
		t.Fatalf("the resume after a restart: %d %v (asked %v), want the same stream %v", st, replayed, again, types)
	}
	body := `{"id":"chat-kill","trigger":"submit-message","messageId":"turn-x","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"x"}]},` +
		`{"id":"turn-x","role":"assistant","parts":[{"type":"dynamic-tool","toolName":"everything__get-sum","toolCallId":"` + asked[0] + `","state":"approval-responded","input":{},"approval":{"id":"` + asked[0] + `","approved":true}}]}]}`
	again2, ins2 := aguiRun(t, p, key, `{"threadId":"thread-kill","runId":"r2","messages":[]}`)
	if len(ins2) != 1 || ins2[0] != ins[0] || again2[len(again2)-1] != "RUN_FINISHED:interrupt" || !slices.Contains(again2, "TOOL_CALL_START") {
		t.Fatalf("AG-UI run without input after the restart: %v (interrupts %v), want the turn again up to interrupt %s", again2, ins2, ins[0])
	}
	resumed, _ := aguiRun(t, p, key, `{"threadId":"thread-kill","runId":"r3","messages":[],"resume":[{"interruptId":"`+ins[0]+`","status":"resolved","payload":{"approved":true}}]}`)
	if !slices.Contains(resumed, "TOOL_CALL_RESULT") || resumed[len(resumed)-1] != "RUN_FINISHED:success" {
		t.Errorf("AG-UI resume after the restart: %v", resumed)
	}
	rest, _, st := chunks(t, "POST", api, key, body)
	got := strings.Join(rest, " ")
	if st != 200 || !strings.Contains(got, "tool-output-available") || !strings.Contains(got, "text-delta") || !strings.HasSuffix(got, "finish:stop") {
		t.Errorf("the approval after the restart: %d %s", st, got)
	}
}

// TestFrontEndStop: a front end's Stop stops the turn, as the UI's own
// Stop does, though all it does is abort its request: useChat's stop()
// (the AI SDK's DefaultChatTransport), after which the next message is
// not refused as busy, and AG-UI's HttpAgent.abortRun(), after which the
// turn stops by itself within the stop grace. The model holds each first
// answer mid-stream, so only a stop ends it (testdata/stop.mjs).
func TestFrontEndStop(t *testing.T) {
	t.Parallel()
	const key = "sk-agentik-test"
	p, _, fake := frontEndFake(t, key)
	for _, client := range []string{"ai-sdk", "ag-ui"} {
		t.Run(client, func(t *testing.T) {
			hold := make(chan struct{}) // never released: a stop must end the answer
			fake.Enqueue(llmtest.Reply{Text: "one two three four", Hold: hold, HoldAfter: 1})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "stop.mjs"))
			cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+p.addr, "AGENTIK_KEY="+key, "AGENTIK_CHAT=stop-"+client, "CLIENT="+client)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, err := cmd.Output()
			if err != nil {
				t.Fatalf("node: %v\n%s\nagentik logs:\n%s", err, stderr.String(), p.logs)
			}
			var got struct {
				Stopped *bool
				Next    struct {
					Text  string
					Error any
				}
				Answers []struct {
					Text        string
					Interrupted bool
				}
			}
			if err := json.Unmarshal(stdout, &got); err != nil {
				t.Fatalf("%v: %s", err, stdout)
			}
			if got.Stopped != nil && !*got.Stopped {
				t.Errorf("the aborted run's turn still runs: %s", stdout)
			}
			if got.Next.Text != "You said: second" || got.Next.Error != nil {
				t.Errorf("the message after the stop: %+v, want its answer", got.Next)
			}
			if len(got.Answers) != 2 || got.Answers[0].Text != "one" || !got.Answers[0].Interrupted || got.Answers[1].Interrupted {
				t.Errorf("answers %+v, want the stopped one (interrupted after its first word), then the next", got.Answers)
			}
		})
	}
}
