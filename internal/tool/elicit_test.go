//go:build unix

package tool

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestEverythingBeyondTools runs server-everything over stdio and checks
// what agentik declares and serves beyond plain tools: the elicitation
// tools register (the capability is declared), the tool that requires
// tasks is not offered, progress reaches the call's hooks, an elicitation
// reaches them and the answer reaches the tool, and an image comes back
// as an image.
func TestEverythingBeyondTools(t *testing.T) {
	t.Parallel()
	_, entry := everything(t)
	cfg := Config{Servers: []ServerConfig{{Name: "e", Transport: TransportStdio, Command: "node", Args: []string{entry, "stdio"}}}}
	logged := make(chan string, 16)
	logger := slog.New(slog.NewTextHandler(logWatch{testWriter{t}, logged}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := start(t, cfg, Options{CallTimeout: everythingIdle, Logger: logger})
	ts := waitState(t, m, "e", agent.ToolServerReady)
	t.Logf("tools %v", ts.Tools)
	for _, want := range []string{"e__trigger-elicitation-request", "e__trigger-url-elicitation", "e__get-tiny-image"} {
		if !slices.Contains(ts.Tools, want) {
			t.Errorf("tools lack %s", want)
		}
	}
	if slices.Contains(ts.Tools, "e__simulate-research-query") {
		t.Errorf("the tool that requires tasks is offered: %v", ts.Tools)
	}
	if slices.Contains(specNames(m), "e__simulate-research-query") {
		t.Errorf("the model is offered the tool that requires tasks")
	}

	// Progress reaches the hooks.
	var mu sync.Mutex
	var progress []agent.Progress
	ctx := agent.WithToolHooks(t.Context(), &agent.ToolHooks{Progress: func(p agent.Progress) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	}})
	if _, err := m.Call(ctx, "e__trigger-long-running-operation", `{"duration":1,"steps":4}`); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(progress) != 4 || progress[3].Progress != 4 || progress[3].Total != 4 {
		t.Errorf("progress = %+v, want 4 steps of 4", progress)
	}
	mu.Unlock()

	// An elicitation asks through the hooks; the answer reaches the tool.
	var asked agent.ElicitRequest
	ctx = agent.WithToolHooks(t.Context(), &agent.ToolHooks{Elicit: func(ctx context.Context, req agent.ElicitRequest) (agent.ElicitResult, error) {
		asked = req
		return agent.ElicitResult{Action: agent.ElicitAccept, Content: json.RawMessage(`{"name":"Ada Lovelace","check":true}`)}, nil
	}})
	out, err := m.Call(ctx, "e__trigger-elicitation-request", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if asked.Server != "e" || asked.Mode != agent.ElicitForm || !strings.Contains(string(asked.Schema), `"birthdate"`) {
		t.Errorf("asked %+v", asked)
	}
	if !strings.Contains(out, "Name: Ada Lovelace") || !strings.Contains(out, "Agreed to terms: true") {
		t.Errorf("result = %q", out)
	}
	ctx = agent.WithToolHooks(t.Context(), &agent.ToolHooks{Elicit: func(ctx context.Context, req agent.ElicitRequest) (agent.ElicitResult, error) {
		return agent.ElicitResult{Action: agent.ElicitDecline}, nil
	}})
	if out, err = m.Call(ctx, "e__trigger-elicitation-request", `{}`); err != nil || !strings.Contains(out, "declined") {
		t.Errorf("declined: %q, %v", out, err)
	}

	// URL mode: the link reaches the hooks; done is accept.
	ctx = agent.WithToolHooks(t.Context(), &agent.ToolHooks{Elicit: func(ctx context.Context, req agent.ElicitRequest) (agent.ElicitResult, error) {
		asked = req
		return agent.ElicitResult{Action: agent.ElicitAccept}, nil
	}})
	if out, err = m.Call(ctx, "e__trigger-url-elicitation", `{"url":"https://example.com/consent"}`); err != nil {
		t.Fatal(err)
	}
	if asked.Mode != agent.ElicitURL || asked.URL != "https://example.com/consent" || asked.ElicitationID == "" {
		t.Errorf("url elicitation asked %+v; result %q", asked, out)
	}

	// A server's log message goes to agentik's log (debug), not the model.
	if out := mustCall(t, m, "e__toggle-simulated-logging", `{}`); !strings.Contains(out, "Started simulated") {
		t.Fatalf("toggle-simulated-logging = %q", out)
	}
	select {
	case line := <-logged:
		if !strings.Contains(line, "level=DEBUG") || !strings.Contains(line, "mcp_server=e") {
			t.Errorf("log line %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no mcp_log line within 30 s of turning the server's logging on")
	}

	// The image comes back as an image.
	img, err := m.CallContent(t.Context(), "e__get-tiny-image", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Images) != 1 || img.Images[0].Mime != "image/png" || !strings.HasPrefix(img.Images[0].Data, "iVBORw0KGgo") {
		t.Errorf("images = %d %+v", len(img.Images), img.Images)
	}
}

// logWatch passes log lines on and sends those of MCP servers' log
// messages (mcp_log) to ch.
type logWatch struct {
	w  testWriter
	ch chan string
}

func (l logWatch) Write(b []byte) (int, error) {
	if strings.Contains(string(b), "msg=mcp_log") {
		select {
		case l.ch <- string(b):
		default:
		}
	}
	return l.w.Write(b)
}

// TestParallelElicitationsStdio makes two calls of server-everything's
// elicitation tool at once over stdio, where nothing in the messages
// says which call an elicitation belongs to: each call's hooks get one
// request, and each call's result has its own answer.
func TestParallelElicitationsStdio(t *testing.T) {
	t.Parallel()
	_, entry := everything(t)
	cfg := Config{Servers: []ServerConfig{{Name: "e", Transport: TransportStdio, Command: "node", Args: []string{entry, "stdio"}}}}
	m := start(t, cfg, Options{CallTimeout: everythingIdle})
	waitState(t, m, "e", agent.ToolServerReady)

	// Each hook answers once two requests were asked, so that both are
	// in flight together.
	var total sync.WaitGroup
	total.Add(2)
	both := make(chan struct{})
	go func() { total.Wait(); close(both) }()
	type result struct {
		name string
		out  string
		err  error
		asks int
	}
	results := make(chan result, 2)
	for _, name := range []string{"Ada", "Grace"} {
		go func() {
			var mu sync.Mutex
			asks := 0
			ctx := agent.WithToolHooks(t.Context(), &agent.ToolHooks{Elicit: func(ctx context.Context, req agent.ElicitRequest) (agent.ElicitResult, error) {
				mu.Lock()
				asks++
				mu.Unlock()
				total.Done()
				<-both
				return agent.ElicitResult{Action: agent.ElicitAccept, Content: json.RawMessage(`{"name":"` + name + `"}`)}, nil
			}})
			out, err := m.Call(ctx, "e__trigger-elicitation-request", `{}`)
			mu.Lock()
			defer mu.Unlock()
			results <- result{name, out, err, asks}
		}()
	}
	for range 2 {
		r := <-results
		if r.err != nil || r.asks != 1 || !strings.Contains(r.out, "Name: "+r.name) {
			t.Errorf("the call answered by %s: asked %d times, result %q, %v", r.name, r.asks, r.out, r.err)
		}
	}
}
