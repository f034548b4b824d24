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
// and seen live on a WebSocket subscription, an unknown model refused;
// models.retrieve, request ids, structured output (parse with zod,
// json_object), every tool_choice form, a stream failing before its first
// token as an HTTP error, a failed stored turn not retried, retries
// (Idempotency-Key, the SDK's retry count) answered by the same turn, and a
// tool message answering no call refused. The fake model is strict about
// tool pairing, as OpenAI is: agentik never sends it a broken history.
func TestOpenAISDK(t *testing.T) {
	t.Parallel()
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
	fake, fakeURL := llmtest.NewHTTPServer(t, llmtest.WithStrictToolPairs())
	const key = "sk-agentik-test"
	p := start(t, freeAddr(t), filepath.Join(dir, "agentik.db"),
		"OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG="+mcp, "AGENTIK_API_KEYS="+key)
	auth := map[string]string{"Authorization": "Bearer " + key}
	waitTools(t, p, auth)

	var conv, retryConv, idemConv, orphanConv agent.Conversation
	requestJSON(t, "POST", p.url("/agentik/conversations"), `{"title":"from the sdk"}`, auth, &conv)
	requestJSON(t, "POST", p.url("/agentik/conversations"), `{"title":"retry"}`, auth, &retryConv)
	requestJSON(t, "POST", p.url("/agentik/conversations"), `{"title":"idempotent"}`, auth, &idemConv)
	requestJSON(t, "POST", p.url("/agentik/conversations"), `{"title":"orphan"}`, auth, &orphanConv)

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
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+p.addr, "AGENTIK_KEY="+key, "AGENTIK_CONVERSATION="+conv.ID,
		"AGENTIK_RETRY_CONVERSATION="+retryConv.ID, "AGENTIK_IDEMPOTENT_CONVERSATION="+idemConv.ID, "AGENTIK_ORPHAN_CONVERSATION="+orphanConv.ID)
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
		Model        string
		ModelUnknown struct {
			Refused  bool
			Status   int
			Code     string
			SDKError bool `json:"sdk_error"`
		} `json:"model_unknown"`
		RequestID struct{ OK, Content, Error string } `json:"request_id"`
		Parsed    *struct {
			City    string
			Celsius float64
		}
		JSONObject  map[string]any    `json:"json_object"`
		ToolChoice  map[string]string `json:"tool_choice"`
		Forced      string
		StreamError struct {
			Thrown      bool
			Status      int
			Type        string
			ServerError bool   `json:"server_error"`
			RequestID   string `json:"request_id"`
		} `json:"stream_error"`
		Retry struct {
			Thrown      bool
			Status      int
			ShouldRetry string `json:"should_retry"`
		}
		Idempotent []string
		Orphan     struct {
			Refused    bool
			Status     int
			BadRequest bool `json:"bad_request"`
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

	checkSDKHelpers(t, p, fake, auth, retryConv.ID, idemConv.ID, orphanConv.ID, sdkHelpers{
		Model: got.Model, ModelUnknown: got.ModelUnknown.Refused && got.ModelUnknown.Status == 404 && got.ModelUnknown.Code == "model_not_found" && got.ModelUnknown.SDKError,
		RequestIDs: []string{got.RequestID.OK, got.RequestID.Error, got.StreamError.RequestID}, Parsed: got.Parsed != nil && got.Parsed.City == "Paris" && got.Parsed.Celsius == 21,
		JSONObject: got.JSONObject["ok"] == true, ToolChoice: got.ToolChoice, Forced: got.Forced,
		StreamError: got.StreamError.Thrown && got.StreamError.Status == 502 && got.StreamError.ServerError,
		Retry:       got.Retry.Thrown && got.Retry.Status == 502 && got.Retry.ShouldRetry == "false",
		Idempotent:  got.Idempotent, Orphan: got.Orphan.Refused && got.Orphan.Status == 400 && got.Orphan.BadRequest,
	})

	// The WebSocket subscriber saw the header turn: the user's message and
	// the streamed answer, then its end.
	if text := turnText(t, ctx, ws, "via header"); !strings.Contains(text, "via header") {
		t.Errorf("the WebSocket subscriber missed the turn: text %q", text)
	}
}

// sdkHelpers is what the SDK script saw of the wave-3 helpers, judged.
type sdkHelpers struct {
	Model        string
	ModelUnknown bool
	RequestIDs   []string
	Parsed       bool
	JSONObject   bool
	ToolChoice   map[string]string
	Forced       string
	StreamError  bool
	Retry        bool
	Idempotent   []string
	Orphan       bool
}

// checkSDKHelpers checks what the SDK saw, what the model was asked, and
// what was stored.
func checkSDKHelpers(t *testing.T, p *proc, fake *llmtest.Server, auth map[string]string, retryID, idemID, orphanID string, got sdkHelpers) {
	t.Helper()
	if got.Model != "fake" || !got.ModelUnknown {
		t.Errorf("models.retrieve: %q, unknown refused %v", got.Model, got.ModelUnknown)
	}
	for i, id := range got.RequestIDs {
		if !strings.HasPrefix(id, "req_") {
			t.Errorf("request id %d (answer, error, stream error) = %q", i, id)
		}
	}
	if !got.Parsed || !got.JSONObject {
		t.Errorf("structured output: parsed %v, json_object %v", got.Parsed, got.JSONObject)
	}
	// asked returns the bodies of the model requests whose last user
	// message contains text.
	asked := func(text string) []map[string]any {
		var out []map[string]any
		for _, r := range fake.Requests() {
			if len(r.Messages) > 0 && strings.HasPrefix(r.Messages[0].Content, "Write a title") {
				continue // the conversation's title, not its turn
			}
			last := ""
			for _, m := range r.Messages {
				if m.Role == "user" {
					last = m.Content
				}
			}
			if strings.Contains(last, text) {
				var b map[string]any
				if err := json.Unmarshal(r.Body, &b); err != nil {
					t.Fatal(err)
				}
				out = append(out, b)
			}
		}
		return out
	}
	asJSON := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	if w := asked("weather"); len(w) != 1 || !strings.Contains(asJSON(w[0]["response_format"]), `"type":"json_schema"`) || !strings.Contains(asJSON(w[0]["response_format"]), `"name":"weather"`) || !strings.Contains(asJSON(w[0]["response_format"]), `"celsius"`) {
		t.Errorf("the model was asked for the weather with %v", w)
	}
	if j := asked("json mode"); len(j) != 1 || asJSON(j[0]["response_format"]) != `{"type":"json_object"}` {
		t.Errorf("the model was asked in json mode with %v", j)
	}
	for name, want := range map[string]string{
		"none": `"none"`, "required": `"required"`, "named": `{"function":{"name":"get_time"},"type":"function"}`, "allowed": `"required"`,
	} {
		reqs := asked("choice " + name)
		if len(reqs) != 1 || asJSON(reqs[0]["tool_choice"]) != want || got.ToolChoice[name] == "" {
			t.Errorf("tool_choice %s: the model got %v (want tool_choice %s), the SDK %q", name, reqs, want, got.ToolChoice[name])
			continue
		}
		if tools := asJSON(reqs[0]["tools"]); name == "allowed" && (!strings.Contains(tools, "get_time") || strings.Contains(tools, "everything__")) {
			t.Errorf("allowed_tools offered %s, want get_time only", tools)
		}
	}
	if f := asked(`"message":"forced"`); len(f) != 2 || asJSON(f[0]["tool_choice"]) != `{"function":{"name":"everything__echo"},"type":"function"}` || f[1]["tool_choice"] != nil || !strings.Contains(got.Forced, "forced") {
		t.Errorf("a forced server-side tool: the model got %v, the SDK %q", f, got.Forced)
	}
	if !got.StreamError || !got.Retry || !got.Orphan {
		t.Errorf("stream error as a status %v, failed stored turn not retried %v, stray tool message refused %v", got.StreamError, got.Retry, got.Orphan)
	}
	history := func(id string) []string {
		var hist struct{ Messages []agent.Message }
		requestJSON(t, "GET", p.url("/agentik/conversations/"+id+"/messages"), "", auth, &hist)
		var types []string
		for _, m := range hist.Messages {
			types = append(types, m.Type)
		}
		return types
	}
	if h := history(retryID); strings.Join(h, " ") != "user_message error" {
		t.Errorf("a failed turn the SDK may retry stored %v, want one user message and its error", h)
	}
	if n := len(asked("fail once")); n != 1 {
		t.Errorf("the model was asked %d times for the failing turn, want once", n)
	}
	if g := got.Idempotent; len(g) != 4 || g[0] != "You said: once only" || g[1] != g[0] || g[2] != "You said: said twice" || g[3] != g[2] {
		t.Errorf("idempotent answers %q", g)
	}
	if h := history(idemID); strings.Join(h, " ") != "user_message assistant_message user_message assistant_message" {
		t.Errorf("retries stored %v, want each turn once", h)
	}
	if len(asked("once only")) != 1 || len(asked("said twice")) != 1 {
		t.Errorf("retried turns reached the model again")
	}
	if h := history(orphanID); len(h) != 0 {
		t.Errorf("a refused tool message stored %v", h)
	}
}

// waitTools waits until the MCP server is ready.
func waitTools(t *testing.T, p *proc, header map[string]string) {
	t.Helper()
	var tools struct{ Servers []agent.ToolServer }
	requestJSON(t, "GET", p.url("/agentik/tools"), "", header, &tools)
	if len(tools.Servers) != 1 {
		t.Fatalf("tool servers %+v, want the one of the test's mcp.json", tools.Servers)
	}
	// Its first start, on its tool_server event (mcpoauth_test.go).
	waitToolStateAs(t, p, strings.TrimPrefix(header["Authorization"], "Bearer "), tools.Servers[0].Name, agent.ToolServerReady)
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

// TestOpenAIHelpers runs the mainstream helpers on chat completions
// against the real binary (testdata/openai_helpers.mjs): the AI SDK's
// generateObject through @ai-sdk/openai's chat model, and @openai/agents
// with OpenAIChatCompletionsModel reading reasoning (run and streamed)
// and returning a structured outputType.
func TestOpenAIHelpers(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	for _, pkg := range []string{"openai", "ai", "@ai-sdk/openai", "@openai/agents", "zod"} {
		if _, err := os.Stat(filepath.Join(root, "node_modules", pkg, "package.json")); err != nil {
			if os.Getenv("AGENTIK_TEST_NO_NODE") != "" {
				t.Skip("AGENTIK_TEST_NO_NODE is set")
			}
			t.Fatalf("%s is missing: run `npm ci` in %s (or set AGENTIK_TEST_NO_NODE=1): %v", pkg, root, err)
		}
	}
	fake, fakeURL := llmtest.NewHTTPServer(t, llmtest.WithStrictToolPairs())
	const key = "sk-agentik-helpers"
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS="+key)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "openai_helpers.mjs"))
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+p.addr, "AGENTIK_KEY="+key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\nagentik logs:\n%s", err, stderr.String(), p.logs)
	}
	type agentsRun struct{ Final, Reasoning string }
	var got struct {
		AISDKObject struct {
			City    string
			Celsius float64
		} `json:"ai_sdk_object"`
		AgentsRun    agentsRun               `json:"agents_run"`
		AgentsStream agentsRun               `json:"agents_stream"`
		AgentsTyped  struct{ Answer string } `json:"agents_typed"`
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if got.AISDKObject.City != "Oslo" || got.AISDKObject.Celsius != -3 {
		t.Errorf("generateObject %+v", got.AISDKObject)
	}
	for name, r := range map[string]agentsRun{"run": got.AgentsRun, "stream": got.AgentsStream} {
		if r.Final != "You said: agents "+name || r.Reasoning != "Thinking about: agents "+name {
			t.Errorf("agents %s: %+v", name, r)
		}
	}
	if got.AgentsTyped.Answer != "forty-two" {
		t.Errorf("agents outputType %+v", got.AgentsTyped)
	}
	var formats []string
	for _, r := range fake.Requests() {
		var b struct {
			ResponseFormat *struct {
				Type string `json:"type"`
			} `json:"response_format"`
		}
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		if b.ResponseFormat != nil {
			formats = append(formats, b.ResponseFormat.Type)
		}
	}
	if strings.Join(formats, " ") != "json_schema json_schema" {
		t.Errorf("the model was asked for formats %v, want json_schema from generateObject and from outputType", formats)
	}
}
