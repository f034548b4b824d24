package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestMCPCancelOtherInstance: two binaries on one PostgreSQL behind a
// proxy that sends each tools/call to A and every other request to B, and
// that, as a load balancer ignoring a client's abort does (nginx's
// proxy_ignore_client_abort), keeps A's call open after the client left.
// The official Go MCP SDK (2026-07-28) calls ask_agentik (the turn runs on
// A), then cancels: its notifications/cancelled reaches B, which follows
// no such call and hands it to the other instances; A interrupts the turn
// as the canceller. The same id cancelled by another user first changes
// nothing.
func TestMCPCancelOtherInstance(t *testing.T) {
	t.Parallel()
	a, b, fake := twoOnPostgres(t, "AGENTIK_API_KEYS="+a2aKey)
	member := memberKey(t, a)
	auth := map[string]string{"Authorization": "Bearer " + a2aKey}

	var mu sync.Mutex
	var callID json.RawMessage // the tools/call's JSON-RPC id, as the proxy saw it
	var toA, toB int
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		to, ctx := b, r.Context()
		mu.Lock()
		if m.Method == "tools/call" {
			to, ctx = a, context.WithoutCancel(ctx) // the client's abort is not passed on
			callID = m.ID
			toA++
		} else {
			toB++
		}
		mu.Unlock()
		req, err := http.NewRequestWithContext(ctx, r.Method, to.url(r.URL.Path), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		rc := http.NewResponseController(w)
		buf := make([]byte, 4096)
		for { // to the end of the upstream answer, whether the client reads it or not
			n, err := resp.Body.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr == nil {
					_ = rc.Flush()
				}
			}
			if err != nil {
				return
			}
		}
	}))
	defer proxy.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress int
	c := mcp.NewClient(&mcp.Implementation{Name: "agentik-go-test", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { mu.Lock(); progress++; mu.Unlock() },
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: proxy.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer(a2aKey)}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("the Go SDK could not connect: %v\nB's logs:\n%s", err, b.logs)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the Go SDK negotiated %q, want 2026-07-28", v)
	}

	var conv struct{ ID string }
	must(t, a2aKey, "POST", a.url("/agentik/conversations"), `{}`, &conv)
	hold := make(chan struct{})
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	defer release() // a turn the cancel did not stop ends when the test does
	fake.Enqueue(llmtest.Reply{Text: strings.Repeat("word ", 50), Hold: hold, HoldAfter: 3})
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "ask_agentik", Arguments: map[string]any{"message": "talk", "conversation_id": conv.ID},
			Meta: mcp.Meta{"progressToken": "long"}})
		errc <- err
	}()
	testwait.For(t, "the call's progress, through A", func() bool { mu.Lock(); defer mu.Unlock(); return progress >= 1 }) // the held tokens may come as one coalesced notification

	// Another user names the same call id on B first: no call of theirs.
	mu.Lock()
	id := callID
	mu.Unlock()
	req, _ := http.NewRequest("POST", b.url("/mcp"), strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+string(id)+`}}`))
	req.Header.Set("Authorization", "Bearer "+member)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("another user's cancel: %d, want 202", resp.StatusCode)
	}

	// The SDK cancels: it closes its stream (the proxy keeps A's open) and
	// sends notifications/cancelled, which goes to B.
	ccancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled call returned %v", err)
	}
	testwait.For(t, "the turn on A, interrupted by the cancel sent to B", func() bool {
		var c struct{ Running bool }
		requestJSON(t, "GET", b.url("/agentik/conversations/"+conv.ID), "", auth, &c)
		var hist struct{ Messages []agent.Message }
		requestJSON(t, "GET", b.url("/agentik/conversations/"+conv.ID+"/messages"), "", auth, &hist)
		last := hist.Messages[len(hist.Messages)-1]
		return !c.Running && last.Type == agent.MessageAssistant && last.Interrupted
	})
	mu.Lock()
	gotA, gotB := toA, toB
	mu.Unlock()
	if gotA != 1 || gotB < 2 {
		t.Errorf("requests: %d to A, %d to B; want the call alone on A, discover and the cancel on B", gotA, gotB)
	}
	// The lines reach the test through the children's stderr pipes: wait
	// for them, then check that nothing more was logged.
	testwait.For(t, "B's two forwarded cancellations and A's cancelled call in the logs", func() bool {
		return strings.Count(b.logs.String(), "msg=mcp_cancel_forwarded") >= 2 && strings.Count(a.logs.String(), "msg=mcp_call_cancelled") >= 1
	})
	if n := strings.Count(b.logs.String(), "msg=mcp_cancel_forwarded"); n != 2 {
		t.Errorf("B forwarded %d cancellations, want 2 (the other user's and the SDK's):\n%s", n, b.logs)
	}
	if n := strings.Count(a.logs.String(), "msg=mcp_call_cancelled"); n != 1 || !strings.Contains(a.logs.String(), "by=peer") || strings.Contains(a.logs.String(), "mcp_interrupt_failed") {
		t.Errorf("A cancelled %d calls, want the SDK's alone, by its peer:\n%s", n, a.logs)
	}
}
