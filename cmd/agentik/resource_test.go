package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/coder/websocket"
)

// everythingEntry is server-everything's entry point in node_modules.
func everythingEntry(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	entry := filepath.Join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		if os.Getenv("AGENTIK_TEST_NO_NODE") != "" {
			t.Skip("AGENTIK_TEST_NO_NODE is set")
		}
		t.Fatalf("server-everything is missing: run `npm ci` in %s (or set AGENTIK_TEST_NO_NODE=1): %v", root, err)
	}
	return entry
}

// startEverything runs the real binary with server-everything (stdio)
// in its mcp.json and the fake model.
func startEverything(t *testing.T, env ...string) (*proc, *llmtest.Server) {
	t.Helper()
	entry := everythingEntry(t)
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	conf := `{"mcpServers":{"everything":{"command":"node","args":["` + entry + `","stdio"]}}}`
	if err := os.WriteFile(mcp, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	env = append([]string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG=" + mcp}, env...)
	p := start(t, freeAddr(t), filepath.Join(dir, "agentik.db"), env...)
	// The server's first start, on its tool_server event: a list or a call
	// before it waits only the server's own start timeout, and a first
	// start that failed under load is retried (restarting, then ready).
	waitToolState(t, p, "everything", agent.ToolServerReady)
	return p, fake
}

// errorOf does a request that must fail and returns its status and Error.
func errorOf(t *testing.T, method, url, body string) (int, agent.Error) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e agent.Error
	if err := json.Unmarshal(b, &e); err != nil || e.Code == "" {
		t.Fatalf("%s %s: %d %s is not an Error", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode, e
}

// wsCall sends one command over a new WebSocket and returns its reply.
func wsCall(t *testing.T, p *proc, cmd string) protocol.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/agentik/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 22)
	if err := ws.Write(ctx, websocket.MessageText, []byte(cmd)); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("no reply to %s: %v", cmd, err)
		}
		var f protocol.Frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if f.Type == protocol.FrameReply {
			return f
		}
	}
}

// TestEverythingResources lists and reads server-everything's resources
// through the real binary, attaches one to a message (the fake model reads
// its text; the stored message keeps only the reference), and checks the
// bad input: nothing stored.
func TestEverythingResources(t *testing.T) {
	t.Parallel()
	p, fake := startEverything(t)

	var list agent.ResourceList
	getJSON(t, p.url("/agentik/resources"), &list) // the server is ready (startEverything)
	var doc agent.Resource
	for _, r := range list.Resources {
		if strings.HasSuffix(r.URI, "/architecture.md") {
			doc = r
		}
	}
	if doc.Server != "everything" || doc.MimeType != "text/markdown" {
		t.Fatalf("no everything architecture.md among %+v", list.Resources)
	}
	found := false
	for _, tm := range list.Templates {
		found = found || tm.URITemplate == "demo://resource/dynamic/text/{resourceId}"
	}
	if !found {
		t.Errorf("templates %+v lack the dynamic text one", list.Templates)
	}
	var read agent.ResourceRead
	getJSON(t, p.url("/agentik/resources/read?server=everything&uri="+url.QueryEscape(doc.URI)), &read)
	if len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "Architecture") {
		t.Fatalf("read = %+v", read)
	}
	docText := read.Contents[0].Text

	// The same over the WebSocket.
	f := wsCall(t, p, `{"op":"read_resource","id":"r1","server":"everything","uri":"demo://resource/dynamic/text/5"}`)
	if !f.OK || !strings.Contains(string(f.Result), "Resource 5: This is a plaintext resource") {
		t.Errorf("read_resource reply = %+v %s", f.Error, f.Result)
	}
	if f := wsCall(t, p, `{"op":"list_resources","id":"r2"}`); !f.OK || !strings.Contains(string(f.Result), doc.URI) {
		t.Errorf("list_resources reply = %+v %s", f.Error, f.Result)
	}
	if f := wsCall(t, p, `{"op":"read_resource","id":"r3","server":"nosuch","uri":"x://y"}`); f.OK || f.Error.Code != agent.CodeNotFound || !strings.Contains(f.Error.Message, `"nosuch"`) {
		t.Errorf("read_resource of an unknown server = %+v", f.Error)
	}

	var c agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &c)
	// Bad input changes nothing.
	for _, tt := range []struct {
		content, code, says string
		status              int
	}{
		{`[{"type":"text","body":"read it"},{"type":"resource","server":"nosuch","uri":"` + doc.URI + `"}]`, agent.CodeNotFound, `"nosuch"`, 404},
		{`[{"type":"resource","server":"everything","uri":"demo://no/such/thing"}]`, agent.CodeNotFound, "demo://no/such/thing", 404},
		{`[{"type":"resource","server":"everything"}]`, agent.CodeBadRequest, "uri", 400},
	} {
		status, e := errorOf(t, "POST", p.url("/agentik/conversations/"+c.ID+"/send"), `{"content":`+tt.content+`}`)
		if status != tt.status || e.Code != tt.code || !strings.Contains(e.Message, tt.says) {
			t.Errorf("send %s = %d %+v, want %d %s saying %s", tt.content, status, e, tt.status, tt.code, tt.says)
		}
	}
	if status, e := errorOf(t, "GET", p.url("/agentik/resources/read?server=nosuch&uri=x"), ""); status != 404 || !strings.Contains(e.Message, `"nosuch"`) {
		t.Errorf("read of an unknown server = %d %+v", status, e)
	}
	var got agent.Conversation
	getJSON(t, p.url("/agentik/conversations/"+c.ID), &got)
	if got.MessageCount != 0 {
		t.Fatalf("bad sends stored %d messages", got.MessageCount)
	}

	fake.Enqueue(llmtest.Reply{Text: "a fine architecture"})
	resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json",
		strings.NewReader(`{"content":[{"type":"text","body":"summarize this"},{"type":"resource","server":"everything","uri":"`+doc.URI+`","name":"architecture.md"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body) // the turn's SSE, until its end
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "a fine architecture") {
		t.Fatalf("send: %d %s", resp.StatusCode, body)
	}
	user := fake.Requests()[0].Messages[1]
	if user.Role != "user" || !strings.Contains(user.Content, "summarize this") || !strings.Contains(user.Content, docText) || !strings.Contains(user.Content, doc.URI) {
		t.Fatalf("the model's user message lacks the resource's text: %q", agent.Shorten(user.Content, 300))
	}
	var ms struct{ Messages []agent.Message }
	getJSON(t, p.url("/agentik/conversations/"+c.ID+"/messages"), &ms)
	stored, _ := json.Marshal(ms.Messages[0].Content)
	want := `[{"type":"text","body":"summarize this"},{"type":"resource","server":"everything","uri":"` + doc.URI + `","name":"architecture.md"}]`
	if string(stored) != want {
		t.Errorf("stored message content = %s, want %s", stored, want)
	}
	if strings.Contains(string(stored), docText[:40]) {
		t.Error("the stored message holds the resource's text, not only its reference")
	}

	// The attached resource is followed: the model turns on
	// server-everything's simulated updates (one is sent at once), and the
	// update arrives as a live resource_updated agent event.
	ctx, cancel := context.WithTimeout(context.Background(), toolStartBound) // the server sends an update at once and every 5 s; 30 s ran out under parallel load
	defer cancel()
	events := sse(t, ctx, "", p.url("/agentik/events"), "")
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_t", Name: "everything__toggle-subscriber-updates", Arguments: `{}`}}})
	fake.Enqueue(llmtest.Reply{Text: "updates on"})
	resp, err = http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"turn on updates"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "updates on") {
		t.Fatalf("second send: %s", body)
	}
	want = `{"type":"resource_updated","resource":{"server":"everything","uri":"` + doc.URI + `"}}`
	for ev := range events {
		if ev.data == want {
			return
		}
	}
	// A tool server restarted meanwhile (a ping timing out under load)
	// forgets the toggle: its log says whether that is what happened.
	t.Fatalf("no %s on /agentik/events; agentik's log:\n%s", want, p.logs)
}

// TestEverythingPrompts lists and expands server-everything's prompts
// through the real binary, over REST and the WebSocket.
func TestEverythingPrompts(t *testing.T) {
	t.Parallel()
	p, _ := startEverything(t)
	var list protocol.PromptsResult
	getJSON(t, p.url("/agentik/prompts"), &list)
	var args *agent.Prompt
	for i, pr := range list.Prompts {
		if pr.Name == "args-prompt" {
			args = &list.Prompts[i]
		}
	}
	if args == nil || args.Server != "everything" || len(args.Arguments) != 2 || args.Arguments[0].Name != "city" || !args.Arguments[0].Required {
		t.Fatalf("args-prompt = %+v among %+v", args, list.Prompts)
	}
	var got agent.PromptResult
	postJSON(t, p.url("/agentik/prompts/get"), `{"server":"everything","name":"args-prompt","arguments":{"city":"Lyon","state":"Rhône"}}`, &got)
	if len(got.Messages) != 1 || got.Messages[0].Role != "user" || got.Messages[0].Content[0].Body != "What's weather in Lyon, Rhône?" {
		t.Errorf("args-prompt = %+v", got)
	}
	postJSON(t, p.url("/agentik/prompts/get"), `{"server":"everything","name":"simple-prompt"}`, &got)
	if len(got.Messages) != 1 || !strings.Contains(got.Messages[0].Content[0].Body, "simple prompt") {
		t.Errorf("simple-prompt = %+v", got)
	}
	f := wsCall(t, p, `{"op":"get_prompt","id":"p1","server":"everything","name":"resource-prompt","arguments":{"resourceType":"Text","resourceId":"2"}}`)
	if !f.OK || !strings.Contains(string(f.Result), `{"type":"resource","server":"everything","uri":"demo://resource/dynamic/text/2"}`) {
		t.Errorf("get_prompt resource-prompt = %+v %s", f.Error, f.Result)
	}
	if f := wsCall(t, p, `{"op":"list_prompts","id":"p2"}`); !f.OK || !strings.Contains(string(f.Result), `"args-prompt"`) {
		t.Errorf("list_prompts = %+v %s", f.Error, f.Result)
	}
	for _, tt := range []struct {
		body, code, says string
		status           int
	}{
		{`{"server":"everything","name":"args-prompt","arguments":{"state":"Rhône"}}`, agent.CodeBadRequest, `"city"`, 400},
		{`{"server":"everything","name":"args-prompt","arguments":{"city":3}}`, agent.CodeBadRequest, `"city"`, 400},
		{`{"server":"everything","name":"no-such-prompt"}`, agent.CodeNotFound, `"no-such-prompt"`, 404},
		{`{"server":"nosuch","name":"args-prompt"}`, agent.CodeNotFound, `"nosuch"`, 404},
	} {
		status, e := errorOf(t, "POST", p.url("/agentik/prompts/get"), tt.body)
		if status != tt.status || e.Code != tt.code || !strings.Contains(e.Message, tt.says) {
			t.Errorf("get %s = %d %+v, want %d %s saying %s", tt.body, status, e, tt.status, tt.code, tt.says)
		}
	}
	if f := wsCall(t, p, `{"op":"get_prompt","id":"p3","server":"everything","name":"args-prompt"}`); f.OK || f.Error.Code != agent.CodeBadRequest || !strings.Contains(f.Error.Message, `"city"`) {
		t.Errorf("get_prompt without city = %+v", f.Error)
	}
}
