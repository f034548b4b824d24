package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// convEvent is an event of a conversation's SSE stream, as these tests
// read it.
type convEvent struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Server    string          `json:"server"`
	Message   json.RawMessage `json:"message"`
	Schema    json.RawMessage `json:"schema"`
	Action    string          `json:"action"`
	CallID    string          `json:"call_id"`
	Result    string          `json:"result"`
	Images    []agent.Content `json:"images"`
	Progress  *struct {
		Progress, Total float64
	} `json:"progress"`
}

// stream follows a conversation's events from after lastID; next returns
// the next event of type typ (with its SSE id), failing the test after 60 s.
type stream struct {
	t  *testing.T
	ch <-chan sseEvent
}

func follow(t *testing.T, ctx context.Context, p *proc, convID, lastID string) *stream {
	return &stream{t, sse(t, ctx, "", p.url("/agentik/conversations/"+convID+"/events"), lastID)}
}

func (s *stream) next(typ string, seen func(convEvent)) (convEvent, string) {
	s.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-s.ch:
			if !ok {
				s.t.Fatalf("the stream ended before a %s event", typ)
			}
			var e convEvent
			if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
				s.t.Fatalf("%v: %s", err, ev.data)
			}
			if seen != nil {
				seen(e)
			}
			if e.Type == typ {
				return e, ev.id
			}
		case <-timeout:
			s.t.Fatalf("no %s event within 60 s", typ)
		}
	}
}

// post sends body to url and returns the status and body.
func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestElicitationSurvivesKill9 runs the real binary with server-everything
// (stdio, from mcp.json). Its trigger-elicitation-request tool asks; the
// request waits, stored; bad answers are refused and it still waits;
// kill -9; after the restart it still waits; the answer given over REST
// reaches the tool (run again, given the stored answer); a second answer
// is 409. Then, on the same binary: a decline reaches the tool too, the
// long-running tool's progress arrives live, the image tool's image
// reaches the (vision) model as an image part, and the tool that requires
// tasks is never offered.
func TestElicitationSurvivesKill9(t *testing.T) {
	t.Parallel()
	entry := everythingEntry(t)
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"everything":{"command":"node","args":["`+entry+`","stdio"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	addr, db := freeAddr(t), filepath.Join(dir, "agentik.db")
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG=" + mcp}
	p := start(t, addr, db, env...)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var c agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &c)
	events := follow(t, ctx, p, c.ID, "0")
	send := func(p *proc, text string) {
		t.Helper()
		resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"`+text+`"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
	}
	elicit := func(p *proc, body string) (int, string) {
		t.Helper()
		return post(t, p.url("/agentik/conversations/"+c.ID+"/elicit"), body)
	}
	conv := func(p *proc) agent.Conversation {
		var got agent.Conversation
		getJSON(t, p.url("/agentik/conversations/"+c.ID), &got)
		return got
	}

	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_1", Name: "everything__trigger-elicitation-request", Arguments: `{}`}}})
	send(p, "ask me")
	req, _ := events.next("elicitation_request", nil)
	if req.Server != "everything" || req.CallID != "call_1" || !strings.Contains(string(req.Schema), `"birthdate"`) || !strings.Contains(string(req.Message), "Please provide inputs") {
		t.Fatalf("elicitation_request %+v", req)
	}
	if w := conv(p).Waiting; !slices.Equal(w, []string{req.RequestID}) {
		t.Fatalf("waiting = %v, want [%s]", w, req.RequestID)
	}
	// Bad input: each is refused, naming what is wrong, and the request
	// still waits.
	for _, tt := range []struct {
		body string
		code int
		want string
	}{
		{`{"request_id":"` + req.RequestID + `","action":"accept","content":{"name":5}}`, 400, "content.name"},
		{`{"request_id":"` + req.RequestID + `","action":"accept","content":{"check":true}}`, 400, "content.name: is required"},
		{`{"request_id":"` + req.RequestID + `","action":"accept","content":{"name":"Ada","integer":500}}`, 400, "content.integer: must be at most 100"},
		{`{"request_id":"` + req.RequestID + `","action":"accept","content":{"name":"Ada","email":"not an email"}}`, 400, "content.email"},
		{`{"request_id":"` + req.RequestID + `","action":"maybe"}`, 400, "action must be"},
		{`{"request_id":"nope","action":"decline"}`, 404, "no elicitation nope"},
	} {
		if code, body := elicit(p, tt.body); code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %s, want %d with %q", tt.body, code, body, tt.code, tt.want)
		}
	}
	if w := conv(p).Waiting; !slices.Equal(w, []string{req.RequestID}) {
		t.Fatalf("after bad answers, waiting = %v", w)
	}

	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	p = start(t, addr, db, env...)
	if w := conv(p); !w.Running || !slices.Equal(w.Waiting, []string{req.RequestID}) {
		t.Fatalf("after the restart: %+v", w)
	}
	events = follow(t, ctx, p, c.ID, "0")
	fake.Enqueue(llmtest.Reply{Text: "thanks, Ada"})
	if code, body := elicit(p, `{"request_id":"`+req.RequestID+`","action":"accept","content":{"name":"Ada Lovelace","check":true,"integer":7}}`); code != 200 {
		t.Fatalf("answer: %d %s", code, body)
	}
	if code, body := elicit(p, `{"request_id":"`+req.RequestID+`","action":"decline"}`); code != http.StatusConflict {
		t.Errorf("second answer: %d %s, want 409", code, body)
	}
	ans, _ := events.next("elicitation", nil)
	if ans.RequestID != req.RequestID || ans.Action != "accept" {
		t.Errorf("elicitation event %+v", ans)
	}
	res, _ := events.next("tool_result", nil)
	if !strings.Contains(res.Result, "Name: Ada Lovelace") || !strings.Contains(res.Result, "Favorite Integer: 7") {
		t.Errorf("tool result %q, want the answer given after the restart\nlogs:\n%s", res.Result, p.logs)
	}
	events.next("end", nil)

	// Decline reaches the tool too (answered over WebSocket-free REST
	// while the call runs).
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_2", Name: "everything__trigger-elicitation-request", Arguments: `{}`}}})
	fake.Enqueue(llmtest.Reply{Text: "fine"})
	send(p, "ask again")
	req, _ = events.next("elicitation_request", nil)
	if code, body := elicit(p, `{"request_id":"`+req.RequestID+`","action":"decline"}`); code != 200 {
		t.Fatalf("decline: %d %s", code, body)
	}
	if res, _ = events.next("tool_result", nil); !strings.Contains(res.Result, "User declined") {
		t.Errorf("tool result after decline %q", res.Result)
	}
	events.next("end", nil)

	// Interrupt while it waits: the request is cancelled, the turn ends,
	// nothing waits, and a late answer is a conflict.
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_5", Name: "everything__trigger-elicitation-request", Arguments: `{}`}}})
	send(p, "ask and be stopped")
	req, _ = events.next("elicitation_request", nil)
	if code, body := post(t, p.url("/agentik/conversations/"+c.ID+"/interrupt"), ``); code != 200 {
		t.Fatalf("interrupt: %d %s", code, body)
	}
	if ans, _ = events.next("elicitation", nil); ans.RequestID != req.RequestID || ans.Action != "cancel" {
		t.Errorf("after interrupt: %+v", ans)
	}
	events.next("end", nil)
	if w := conv(p); w.Running || len(w.Waiting) != 0 {
		t.Errorf("after interrupt: running %v, waiting %v", w.Running, w.Waiting)
	}
	if code, body := elicit(p, `{"request_id":"`+req.RequestID+`","action":"decline"}`); code != http.StatusConflict {
		t.Errorf("answer after interrupt: %d %s, want 409", code, body)
	}

	// Progress arrives live, as tool_progress events before the result.
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_3", Name: "everything__trigger-long-running-operation", Arguments: `{"duration":1,"steps":4}`}}})
	fake.Enqueue(llmtest.Reply{Text: "done"})
	send(p, "work")
	var steps []float64
	events.next("tool_result", func(e convEvent) {
		if e.Type == "tool_progress" && e.Progress != nil {
			steps = append(steps, e.Progress.Progress)
		}
	})
	if !slices.Equal(steps, []float64{1, 2, 3, 4}) {
		t.Errorf("progress steps %v, want 1..4", steps)
	}
	events.next("end", nil)

	// The image reaches the card (the tool_result's images) and the model.
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_4", Name: "everything__get-tiny-image", Arguments: `{}`}}})
	fake.Enqueue(llmtest.Reply{Text: "a tiny logo"})
	send(p, "show me")
	if res, _ = events.next("tool_result", nil); len(res.Images) != 1 || res.Images[0].Mime != "image/png" {
		t.Errorf("tool_result images %+v", res.Images)
	}
	events.next("end", nil)
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	var image bool
	for _, m := range last.Messages {
		for _, part := range m.Parts {
			image = image || (m.Role == "user" && part.Type == "image_url" && strings.HasPrefix(part.ImageURL, "data:image/png;base64,iVBORw0KGgo"))
		}
	}
	if !image {
		t.Errorf("the model's request after the image tool has no image part: %+v", last.Messages)
	}
	for _, tool := range last.Tools {
		if strings.Contains(tool.Name, "simulate-research-query") {
			t.Errorf("the model is offered %s, which requires tasks", tool.Name)
		}
	}
	if !slices.ContainsFunc(last.Tools, func(tl llmtest.Tool) bool { return tl.Name == "everything__trigger-elicitation-request" }) {
		t.Errorf("the elicitation tool is not offered: %+v", last.Tools)
	}
}

// TestChatAnswersElicitation: agentik chat asks server-everything's
// elicitation form field by field (defaults kept on an empty line); the
// answer reaches the tool, and its progress and images print too.
func TestChatAnswersElicitation(t *testing.T) {
	t.Parallel()
	entry := everythingEntry(t)
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"everything":{"command":"node","args":["`+entry+`","stdio"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	addr := freeAddr(t)
	start(t, addr, filepath.Join(dir, "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG="+mcp)
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_c", Name: "everything__trigger-elicitation-request", Arguments: `{}`}}})
	fake.Enqueue(llmtest.Reply{Text: "thank you, Grace"})
	stdin, w := io.Pipe()
	defer w.Close()
	var out, errs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runChat(ctx, nil, chatEnv(addr), stdin, &out, &errs, nil) }()
	io.WriteString(w, "ask me\n")
	waitFor(t, &out, "[everything asks] Please provide inputs")
	waitFor(t, &out, "[a]nswer, [d]ecline or [c]ancel? ")
	io.WriteString(w, "a\n")
	for _, f := range []struct{ prompt, answer string }{
		{"name (String) [required]: ", "Grace Hopper"},
		{"birthdate (String with date format): ", ""},
		{"check (Boolean) [y/n]: ", "y"},
		{"email (String with email format): ", "grace@example.com"},
		{"firstLine (String with default) [default \"It was a dark and stormy night.\"]: ", ""},
		{"homepage", ""},
		{"integer (Integer) [default 42]: ", ""},
		{"legacyTitledEnum", ""},
		{"number", ""},
		{"titledMultipleSelectEnum", ""},
		{"titledSingleSelectEnum", ""},
		{"untitledMultipleSelectEnum", ""},
		{"untitledSingleSelectEnum", ""},
	} {
		waitFor(t, &out, f.prompt)
		io.WriteString(w, f.answer+"\n")
	}
	waitFor(t, &out, "thank you, Grace")
	for _, want := range []string{"Name: Grace Hopper", "Agreed to terms: true", "Email: grace@example.com", "Favorite Integer: 42"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the tool result lacks %q:\n%s", want, out.String())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestElicitationAnsweredOnAnotherInstance runs two binaries on one
// PostgreSQL, each with server-everything: a turn runs on A, its tool asks,
// and the answer given through B's REST reaches the tool that waits on A
// at once (not at the call's hard timeout); A's stream shows the result.
func TestElicitationAnsweredOnAnotherInstance(t *testing.T) {
	t.Parallel()
	dsn := freshSchema(t)
	entry := everythingEntry(t)
	mcp := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"everything":{"command":"node","args":["`+entry+`","stdio"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG=" + mcp}
	a := startDSN(t, dsn, env...)
	b := startDSN(t, dsn, env...)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var c agent.Conversation
	postJSON(t, a.url("/agentik/conversations"), `{}`, &c)
	events := follow(t, ctx, a, c.ID, "0")
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_x", Name: "everything__trigger-elicitation-request", Arguments: `{}`}}})
	fake.Enqueue(llmtest.Reply{Text: "thanks, Ada"})
	resp, err := http.Post(a.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"ask me"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	req, _ := events.next("elicitation_request", nil)
	if code, body := post(t, b.url("/agentik/conversations/"+c.ID+"/elicit"), `{"request_id":"`+req.RequestID+`","action":"accept","content":{"name":"Ada Lovelace","integer":9}}`); code != 200 {
		t.Fatalf("answer through B: %d %s", code, body)
	}
	res, _ := events.next("tool_result", nil)
	if !strings.Contains(res.Result, "Name: Ada Lovelace") || !strings.Contains(res.Result, "Favorite Integer: 9") {
		t.Fatalf("tool result on A %q, want B's answer\nA's logs:\n%s", res.Result, tail(a.logs.String(), 2000))
	}
	events.next("end", nil)
}
