package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
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

// TestOpenAISDK runs the official OpenAI Node SDK (npm package openai,
// testdata/openai_sdk.mjs) against the real binary with the fake model and
// the npm reference MCP server: models list, plain and streamed
// completions with usage, a server-side MCP tool round, a client-side tool
// call returned and answered, a stored conversation continued by header
// and seen live on a WebSocket subscription, an unknown model refused.
func TestOpenAISDK(t *testing.T) {
	root := repoRoot(t)
	entry := filepath.Join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	sdk := filepath.Join(root, "node_modules", "openai", "package.json")
	for _, f := range []string{entry, sdk} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("AGENTIK_TEST_NO_NODE") != "" {
				t.Skip("AGENTIK_TEST_NO_NODE is set")
			}
			t.Fatalf("%s is missing: run `npm ci` in %s (or set AGENTIK_TEST_NO_NODE=1): %v", f, root, err)
		}
	}
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"everything":{"command":"node","args":["`+entry+`","stdio"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, fakeURL := llmtest.NewHTTPServer(t)
	const key = "sk-agentik-test"
	p := start(t, freeAddr(t), filepath.Join(dir, "agentik.db"),
		"OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG="+mcp, "AGENTIK_API_KEYS="+key)
	auth := map[string]string{"Authorization": "Bearer " + key}
	waitTools(t, p, auth)

	var conv agent.Conversation
	requestJSON(t, "POST", p.url("/agentik/conversations"), `{"title":"from the sdk"}`, auth, &conv)

	// A WebSocket client watches the stored conversation.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/agentik/ws", &websocket.DialOptions{HTTPHeader: map[string][]string{"Authorization": {"Bearer " + key}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"op":"subscribe","id":"1","stream":"conversation","conversation_id":"`+conv.ID+`","after":0}`)); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "openai_sdk.mjs"))
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+p.addr, "AGENTIK_KEY="+key, "AGENTIK_CONVERSATION="+conv.ID)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\nagentik logs:\n%s", err, stderr.String(), p.logs)
	}
	var got struct {
		Models []string
		Plain  struct {
			Content, Finish, Object string
			Usage                   agent.Usage
		}
		Streamed struct {
			Content, Finish string
			Chunks          int
			Usage           *agent.Usage
		}
		ServerTool struct{ Content, Finish string }      `json:"server_tool"`
		ClientTool struct{ Finish, Name, Answer string } `json:"client_tool"`
		Header     string
		Unknown    struct {
			Refused     bool
			Status      int
			Code, Param string
			Type        string
			SDKError    bool `json:"sdk_error"`
		}
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(got.Models) != 1 || got.Models[0] != "fake" {
		t.Errorf("models %v", got.Models)
	}
	if got.Plain.Content != "You said: hello sdk" || got.Plain.Finish != "stop" || got.Plain.Object != "chat.completion" || got.Plain.Usage.TotalTokens == 0 {
		t.Errorf("plain %+v", got.Plain)
	}
	if got.Streamed.Content != llmtest.Tokens(30) || got.Streamed.Finish != "stop" || got.Streamed.Usage == nil || got.Streamed.Usage.CompletionTokens == 0 || got.Streamed.Chunks < 3 {
		t.Errorf("streamed %+v", got.Streamed)
	}
	if !strings.Contains(got.ServerTool.Content, "ping from the sdk") || got.ServerTool.Finish != "stop" {
		t.Errorf("server-side tool %+v", got.ServerTool)
	}
	if got.ClientTool.Finish != "tool_calls" || got.ClientTool.Name != "get_time" || got.ClientTool.Answer != "tool said: noon" {
		t.Errorf("client-side tool %+v", got.ClientTool)
	}
	if got.Header != "You said: via header" {
		t.Errorf("header conversation answered %q", got.Header)
	}
	if !got.Unknown.Refused || got.Unknown.Status != 404 || got.Unknown.Code != "model_not_found" || got.Unknown.Param != "model" || !got.Unknown.SDKError {
		t.Errorf("unknown model %+v", got.Unknown)
	}

	// The WebSocket subscriber saw the header turn: the user's message and
	// the streamed answer, then its end.
	// The answer's text may arrive in several append_text events (how many
	// depends on the pace of the stream), so it is judged whole.
	var sawUser bool
	var text strings.Builder
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("websocket: %v (user %v, text %q)", err, sawUser, text.String())
		}
		var f struct {
			Type  string
			Event *agent.AllEvent
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if f.Type != "event" || f.Event == nil || f.Event.Event == nil {
			continue
		}
		ev := f.Event.Event
		switch {
		case ev.Type == agent.EventMessage && ev.Message.Type == agent.MessageUser:
			sawUser = ev.Message.Content[0].Body == "via header"
		case ev.Type == agent.EventAppendText && sawUser:
			text.WriteString(ev.Text)
		}
		if ev.Type == agent.EventEnd {
			break
		}
	}
	if !sawUser || !strings.Contains(text.String(), "via header") {
		t.Errorf("the WebSocket subscriber missed the turn: user %v, text %q", sawUser, text.String())
	}
}

// waitTools waits until the MCP server is ready.
func waitTools(t *testing.T, p *proc, header map[string]string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var tools struct{ Servers []agent.ToolServer }
		requestJSON(t, "GET", p.url("/agentik/tools"), "", header, &tools)
		if len(tools.Servers) == 1 && tools.Servers[0].State == agent.ToolServerReady {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tool server not ready: %+v\nlogs:\n%s", tools, p.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// requestJSON sends a request with headers and decodes a 2xx JSON answer.
func requestJSON(t *testing.T, method, url, body string, header map[string]string, out any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}
