package main

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// bearer adds a key to every request of the MCP SDK's client.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// goSDK connects the official Go MCP SDK's client to p's /mcp with its
// defaults (it negotiates 2026-07-28 through server/discover), answering
// elicitations with elicit when set.
func goSDK(t *testing.T, ctx context.Context, p *proc, key string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "agentik-go-test", Version: "1.0.0"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url("/mcp"), HTTPClient: &http.Client{Transport: bearer(key)}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("the Go SDK could not connect: %v\nagentik logs:\n%s", err, p.logs)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func goText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestMCPGoSDK drives agentik's MCP server with the official Go MCP SDK
// (github.com/modelcontextprotocol/go-sdk) over streamable HTTP against the
// real binary. The SDK picks 2026-07-28 by default: server/discover, no
// session, each request's _meta. A plain call returns the answer with its
// progress; a call whose tool call needs approval gets an input_required
// result, the SDK asks its elicitation handler and retries with the
// answer, and the call returns the tool's result (the decision went
// through the inbox); when the same item is answered first from the
// inbox, that answer stands and the client's retry changes nothing; a
// cancelled call (the SDK closes the call's stream,
// then sends notifications/cancelled on its own POST, without _meta)
// interrupts the turn, and the session goes on working.
func TestMCPGoSDK(t *testing.T) {
	t.Parallel()
	env, db := a2aEnv(t)
	p := start(t, freeAddr(t), db, env...)
	auth := map[string]string{"Authorization": "Bearer " + a2aKey}
	waitTools(t, p, auth)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var asked []string
	var progress []string
	inboxFirst := false // the elicitation handler answers the item from the inbox before it answers
	cs := goSDK(t, ctx, p, a2aKey, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			first := inboxFirst
			mu.Unlock()
			if first {
				for _, it := range inboxItems(t, p, a2aKey, "pending") {
					must(t, a2aKey, "POST", p.url("/agentik/inbox/"+it.ID), `{"decision":"deny","reason":"answered from the inbox"}`, nil)
				}
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			mu.Unlock()
		},
	})
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the Go SDK negotiated %q, want 2026-07-28", v)
	}
	if cs.ID() != "" {
		t.Errorf("a 2026-07-28 connection got session %q, want none", cs.ID())
	}

	// A plain call, its text also streamed as progress.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_agentik", Arguments: map[string]any{"message": "[[tokens=40 delay=2ms]]"},
		Meta: mcp.Meta{"progressToken": "plain"}})
	if err != nil {
		t.Fatalf("plain call: %v\n%s", err, p.logs)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	conv, _ := sc["conversation_id"].(string)
	if goText(res) != llmtest.Tokens(40) || res.IsError || conv == "" {
		t.Errorf("plain call: %q (error %v, structured %v)", goText(res), res.IsError, res.StructuredContent)
	}
	// The SDK hands progress to its handler on its own goroutine.
	testwait.For(t, "the answer streamed as progress", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(progress, "") == llmtest.Tokens(40)
	})

	// An approval, answered through input_required.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_agentik", Arguments: map[string]any{"message": `[[tool=everything__echo args={"message":"ping go"}]]`}})
	if err != nil {
		t.Fatalf("call needing approval: %v\n%s", err, p.logs)
	}
	mu.Lock()
	gotAsked := append([]string(nil), asked...)
	mu.Unlock()
	if len(gotAsked) != 1 || !strings.Contains(gotAsked[0], "everything__echo") || !strings.Contains(goText(res), "ping go") || res.IsError {
		t.Errorf("approval through input_required: asked %q, result %q (error %v)", gotAsked, goText(res), res.IsError)
	}
	// The child's log reaches p.logs through a pipe, after the answer.
	testwait.For(t, "the approval answered through input_required (mcp_input_answered logged)", func() bool {
		return strings.Contains(p.logs.String(), "mcp_input_answered")
	})
	if strings.Contains(p.logs.String(), "mcp_elicitation_failed") {
		t.Errorf("the approval was not answered through input_required:\n%s", p.logs)
	}

	// The same item answered first elsewhere (the inbox): the client's
	// answer on retry is a conflict that changes nothing, the first stands.
	mu.Lock()
	inboxFirst = true
	mu.Unlock()
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_agentik", Arguments: map[string]any{"message": `[[tool=everything__echo args={"message":"ping twice"}]]`}})
	if err != nil {
		t.Fatalf("call answered from the inbox first: %v\n%s", err, p.logs)
	}
	if txt := goText(res); !strings.Contains(txt, "answered from the inbox") || strings.Contains(txt, "Echo: ping twice") {
		t.Errorf("the inbox's denial did not stand: %q", txt)
	}
	testwait.For(t, "the client's later answer refused as already answered (mcp_input_already_answered logged)", func() bool {
		return strings.Contains(p.logs.String(), "mcp_input_already_answered")
	})

	// A cancel interrupts the turn: the SDK cancels once text streams.
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	mu.Lock()
	progress = nil
	mu.Unlock()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "ask_agentik", Arguments: map[string]any{"message": "[[tokens=3000 delay=3ms]]", "conversation_id": conv},
			Meta: mcp.Meta{"progressToken": "long"}})
		errc <- err
	}()
	testwait.For(t, "the long call's progress", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) >= 3
	})
	ccancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled call returned %v", err)
	}
	var last agent.Message
	testwait.For(t, "the cancelled turn's answer, interrupted", func() bool {
		var c struct{ Running bool }
		requestJSON(t, "GET", p.url("/agentik/conversations/"+conv), "", auth, &c)
		var hist struct{ Messages []agent.Message }
		requestJSON(t, "GET", p.url("/agentik/conversations/"+conv+"/messages"), "", auth, &hist)
		last = hist.Messages[len(hist.Messages)-1]
		return !c.Running && last.Type == agent.MessageAssistant && last.Interrupted
	})
	testwait.For(t, "mcp_call_cancelled in the log (through the child's stderr pipe)", func() bool {
		return strings.Contains(p.logs.String(), "mcp_call_cancelled")
	})

	// The connection goes on.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_agentik", Arguments: map[string]any{"message": "after", "conversation_id": conv}})
	if err != nil || goText(res) != "You said: after" {
		t.Errorf("a call after the cancel: %v, %+v", err, res)
	}
}

// TestMCPGoCancels: a cancel stops the turn from each Go client whichever
// way it cancels: the official SDK on a 2025-11-25 session (it closes the
// call's stream, then sends notifications/cancelled on a POST of its own
// with the session id), and mcp-go's client on 2026-07-28 (it only closes
// the call's stream, which on that revision is the cancellation).
func TestMCPGoCancels(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS="+a2aKey)
	auth := map[string]string{"Authorization": "Bearer " + a2aKey}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// cancelled starts a long call in a new conversation through call,
	// cancels it once progress comes and checks the turn stopped.
	cancelled := func(name string, call func(ctx context.Context, conv string) error, progressed func() bool) {
		t.Helper()
		var c struct{ ID string }
		must(t, a2aKey, "POST", p.url("/agentik/conversations"), `{}`, &c)
		cctx, ccancel := context.WithCancel(ctx)
		defer ccancel()
		errc := make(chan error, 1)
		go func() { errc <- call(cctx, c.ID) }()
		testwait.For(t, name+": the long call's progress", progressed)
		ccancel()
		if err := <-errc; err == nil {
			t.Errorf("%s: the cancelled call returned no error", name)
		}
		testwait.For(t, name+": the cancelled turn's answer, interrupted", func() bool {
			var conv struct{ Running bool }
			requestJSON(t, "GET", p.url("/agentik/conversations/"+c.ID), "", auth, &conv)
			var hist struct{ Messages []agent.Message }
			requestJSON(t, "GET", p.url("/agentik/conversations/"+c.ID+"/messages"), "", auth, &hist)
			last := hist.Messages[len(hist.Messages)-1]
			return !conv.Running && last.Type == agent.MessageAssistant && last.Interrupted
		})
	}

	// The official SDK on a 2025-11-25 session.
	var mu sync.Mutex
	n := 0
	c := mcp.NewClient(&mcp.Implementation{Name: "agentik-go-test", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { mu.Lock(); n++; mu.Unlock() },
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url("/mcp"), HTTPClient: &http.Client{Transport: bearer(a2aKey)}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" || cs.ID() == "" {
		t.Fatalf("the Go SDK pinned to 2025-11-25 got %q, session %q", v, cs.ID())
	}
	cancelled("go-sdk 2025-11-25", func(ctx context.Context, conv string) error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_agentik", Arguments: map[string]any{"message": "[[tokens=3000 delay=3ms]]", "conversation_id": conv},
			Meta: mcp.Meta{"progressToken": "long"}})
		return err
	}, func() bool { mu.Lock(); defer mu.Unlock(); return n >= 3 })
	// The line reaches the test through the child's stderr pipe: wait for it.
	testwait.For(t, "the 2025-11-25 cancel matched to its call (mcp_call_cancelled)", func() bool {
		return strings.Contains(p.logs.String(), "mcp_call_cancelled")
	})

	// mcp-go's client on 2026-07-28.
	mc, err := mcpgoclient.NewStreamableHttpClient(p.url("/mcp"), mcpgotransport.WithHTTPHeaders(auth))
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	var m int
	mc.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == string(mcpgo.MethodNotificationProgress) {
			mu.Lock()
			m++
			mu.Unlock()
		}
	})
	if err := mc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ClientInfo = mcpgo.Implementation{Name: "agentik-mcp-go-test", Version: "1"}
	if res, err := mc.Initialize(ctx, init); err != nil || res.ProtocolVersion != "2026-07-28" {
		t.Fatalf("mcp-go's client: %v, %+v", err, res)
	}
	cancelled("mcp-go 2026-07-28", func(ctx context.Context, conv string) error {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "ask_agentik"
		req.Params.Arguments = map[string]any{"message": "[[tokens=3000 delay=3ms]]", "conversation_id": conv}
		req.Params.Meta = &mcpgo.Meta{ProgressToken: "long"}
		_, err := mc.CallTool(ctx, req)
		return err
	}, func() bool { mu.Lock(); defer mu.Unlock(); return m >= 3 })
}
