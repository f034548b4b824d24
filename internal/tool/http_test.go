package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// newTestMCP is an in-process MCP server with echo and add_tool.
func newTestMCP() *server.MCPServer {
	s := server.NewMCPServer("httptest", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool("add_tool", mcp.WithString("name", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := req.GetString("name", "")
			s.AddTool(mcp.NewTool(name), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("I am " + name), nil
			})
			return mcp.NewToolResultText("added"), nil
		})
	return s
}

// legacyHTTP serves s on the session-based protocol only.
func legacyHTTP(s *server.MCPServer) http.Handler {
	return server.NewStreamableHTTPServer(s, server.WithStreamableHTTPProtocolVersions(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
}

// protocolOf is the protocol version a ready server speaks.
func protocolOf(m *Manager, name string) string {
	for _, s := range m.servers {
		s.mu.Lock()
		sess := s.sess
		s.mu.Unlock()
		if s.cfg.Name == name && sess != nil {
			return sess.client.ProtocolVersion()
		}
	}
	return ""
}

// gate answers 503 while down is set, 401 without the bearer token, and
// passes the rest to next.
type gate struct {
	next  http.Handler
	token string
	down  atomic.Bool
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if g.token != "" && r.Header.Get("Authorization") != "Bearer "+g.token {
		http.Error(w, "who are you", http.StatusUnauthorized)
		return
	}
	g.next.ServeHTTP(w, r)
}

// serveMCP serves h on 127.0.0.1 for the test.
func serveMCP(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// remoteConfig parses an mcp.json with one remote entry "r".
func remoteConfig(t *testing.T, typ, url, token string) Config {
	t.Helper()
	entry := `"url":"` + url + `","headers":{"Authorization":"Bearer ${REMOTE_TOKEN}"}`
	if typ != "" {
		entry += `,"type":"` + typ + `"`
	}
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"r":{`+entry+`}}}`), func(k string) string {
		if k == "REMOTE_TOKEN" {
			return token
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestRemoteTransports(t *testing.T) {
	const token = "remote-secret-1"
	tests := []struct {
		name, typ, path string
		handler         func(*server.MCPServer) http.Handler
		transport       string
	}{
		{"streamable http", "http", "/mcp", func(s *server.MCPServer) http.Handler { return server.NewStreamableHTTPServer(s) }, TransportHTTP},
		{"streamable http, 2025-11-25 only", "http", "/mcp", legacyHTTP, TransportHTTP},
		{"streamable http, stateless", "http", "/mcp", func(s *server.MCPServer) http.Handler {
			return server.NewStreamableHTTPServer(s, server.WithStateLess(true))
		}, TransportHTTP},
		{"streamable http, no type", "", "/mcp", func(s *server.MCPServer) http.Handler { return server.NewStreamableHTTPServer(s) }, TransportHTTP},
		{"sse", "sse", "/sse", func(s *server.MCPServer) http.Handler { return server.NewSSEServer(s) }, TransportSSE},
		{"sse fallback when no type", "", "/sse", func(s *server.MCPServer) http.Handler { return server.NewSSEServer(s) }, TransportSSE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &gate{next: tt.handler(newTestMCP()), token: token}
			ts := serveMCP(t, g)
			m := start(t, remoteConfig(t, tt.typ, ts.URL+tt.path, token), Options{})
			st := waitState(t, m, "r", agent.ToolServerReady)
			if st.Transport != tt.transport {
				t.Errorf("transport = %s, want %s", st.Transport, tt.transport)
			}
			t.Logf("protocol %s", protocolOf(m, "r"))
			if got := mustCall(t, m, "r__echo", `{"text":"over http"}`); got != "over http" {
				t.Errorf("echo = %q", got)
			}
		})
	}
}

func TestRemoteListChanged(t *testing.T) {
	for _, tt := range []struct {
		name    string
		handler func(*server.MCPServer) http.Handler
		path    string
	}{
		{"streamable http", func(s *server.MCPServer) http.Handler { return server.NewStreamableHTTPServer(s) }, "/mcp"},
		{"streamable http, 2025-11-25 only", legacyHTTP, "/mcp"},
		{"sse", func(s *server.MCPServer) http.Handler { return server.NewSSEServer(s) }, "/sse"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := serveMCP(t, tt.handler(newTestMCP()))
			m := start(t, remoteConfig(t, "", ts.URL+tt.path, "x"), Options{})
			waitState(t, m, "r", agent.ToolServerReady)
			t.Logf("protocol %s", protocolOf(m, "r"))
			mustCall(t, m, "r__add_tool", `{"name":"late"}`)
			testwait.For(t, "r__late in the specs", func() bool { return slices.Contains(specNames(m), "r__late") })
			if got := mustCall(t, m, "r__late", "{}"); got != "I am late" {
				t.Errorf("late = %q", got)
			}
		})
	}
}

func TestRemoteUnauthorizedHidesToken(t *testing.T) {
	g := &gate{next: server.NewStreamableHTTPServer(newTestMCP()), token: "the-right-one"}
	ts := serveMCP(t, g)
	m := start(t, remoteConfig(t, "http", ts.URL+"/mcp", "wrong-secret-token"), Options{})
	st := waitState(t, m, "r", agent.ToolServerFailed)
	if st.Error == "" || strings.Contains(st.Error, "wrong-secret-token") {
		t.Errorf("error %q: want one, without the token", st.Error)
	}
	_, err := call(t, m, "r__echo", "{}")
	toolErr(t, err, "unknown tool")
}

func TestRemoteReconnects(t *testing.T) {
	ev := newEvents()
	g := &gate{next: server.NewStreamableHTTPServer(newTestMCP())}
	ts := serveMCP(t, g)
	m := start(t, remoteConfig(t, "http", ts.URL+"/mcp", "x"), Options{OnChange: ev.on, RestartBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	waitState(t, m, "r", agent.ToolServerReady)

	g.down.Store(true)
	_, err := call(t, m, "r__echo", `{"text":"x"}`)
	toolErr(t, err, "503")
	waitState(t, m, "r", agent.ToolServerFailed)
	_, err = call(t, m, "r__echo", `{"text":"x"}`)
	toolErr(t, err, `tool server "r" is failed`)

	g.down.Store(false)
	waitState(t, m, "r", agent.ToolServerReady)
	if got := mustCall(t, m, "r__echo", `{"text":"back"}`); got != "back" {
		t.Errorf("echo = %q", got)
	}
	if got := strings.Join(ev.states("r"), ","); !strings.Contains(got, "ready,restarting,failed") || !strings.HasSuffix(got, "ready") {
		t.Errorf("state events %s", got)
	}
}

// TestRemoteInputRequired: a server on 2026-07-28 (stateless; agentik's
// client found it by server/discover) whose tool answers input_required
// (SEP-2322) instead of sending elicitation/create: the request reaches
// the call's hooks as an elicitation (in a turn: the conversation's and
// the inbox's item), and the answer goes back on the retry, which the
// tool reads with its requestState.
func TestRemoteInputRequired(t *testing.T) {
	s := server.NewMCPServer("mrtr", "1", server.WithToolCapabilities(true))
	var retried atomic.Int32
	s.AddTool(mcp.NewTool("deploy", mcp.WithString("target", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if ans := server.ElicitationResponse(req.Params.InputResponses, "confirm"); ans != nil {
				retried.Add(1)
				if req.Params.RequestState != "asked:"+req.GetString("target", "") {
					return mcp.NewToolResultError("requestState lost: " + req.Params.RequestState), nil
				}
				if ans.Action != mcp.ElicitationResponseActionAccept {
					return mcp.NewToolResultText("not deployed: " + string(ans.Action)), nil
				}
				c, _ := ans.Content.(map[string]any)
				return mcp.NewToolResultText(fmt.Sprintf("deployed to %s by %v", req.GetString("target", ""), c["who"])), nil
			}
			return server.NewInputRequestBuilder("asked:"+req.GetString("target", "")).Elicit("confirm", mcp.ElicitationParams{
				Mode: mcp.ElicitationModeForm, Message: "Deploy to " + req.GetString("target", "") + "?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"who": map[string]any{"type": "string"}}},
			}).ToolResult(), nil
		})
	ts := serveMCP(t, server.NewStreamableHTTPServer(s))
	m := start(t, remoteConfig(t, "http", ts.URL+"/mcp", "unused"), Options{})
	waitState(t, m, "r", agent.ToolServerReady)
	if v := protocolOf(m, "r"); !mcp.IsModernProtocol(v) {
		t.Fatalf("agentik's client speaks %q to a 2026-07-28 server", v)
	}
	var asked []agent.ElicitRequest
	ctx := agent.WithToolHooks(t.Context(), &agent.ToolHooks{Elicit: func(ctx context.Context, req agent.ElicitRequest) (agent.ElicitResult, error) {
		asked = append(asked, req)
		return agent.ElicitResult{Action: agent.ElicitAccept, Content: json.RawMessage(`{"who":"ada"}`)}, nil
	}})
	out, err := m.Call(ctx, "r__deploy", `{"target":"prod"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].Server != "r" || asked[0].Message != "Deploy to prod?" || !strings.Contains(string(asked[0].Schema), `"who"`) {
		t.Errorf("asked %+v", asked)
	}
	if out != "deployed to prod by ada" || retried.Load() != 1 {
		t.Errorf("result %q after %d retries", out, retried.Load())
	}
}
