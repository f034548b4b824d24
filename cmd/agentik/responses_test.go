package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// responsesNode runs testdata/responses_sdk.mjs (the official openai SDK)
// with args against p and decodes what it printed into out.
func responsesNode(t *testing.T, ctx context.Context, p *proc, key string, out any, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join("testdata", "responses_sdk.mjs")}, args...)...)
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+p.addr, "AGENTIK_KEY="+key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %v: %v\n%s\nagentik logs:\n%s", args, err, stderr.String(), p.logs)
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
}

// contiguous reports whether seqs are 0…n-1 in order, each once.
func contiguous(seqs []int) bool {
	for i, s := range seqs {
		if s != i {
			return false
		}
	}
	return len(seqs) > 0
}

// TestResponsesSDK runs the official OpenAI Node SDK's Responses client
// against the real binary with the fake model and the npm reference MCP
// server (its echo tool needs approval): plain, streamed, retrieved,
// continued and branched responses; a background stream dropped midway and
// resumed with starting_after (by hand and with the SDK's helper); cancel;
// a function tool round; an MCP tool round with approval; an unknown
// model. Then a continued response's turn is seen live on a WebSocket, and
// the bad-input table answers OpenAI-shaped 4xx storing nothing.
func TestResponsesSDK(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	entry := filepath.Join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	conf := `{"mcpServers":{"everything":{"command":"node","args":["` + entry + `","stdio"],"requireApproval":{"always":["echo"]}}}}`
	if err := os.WriteFile(mcp, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	const key = "sk-agentik-test"
	p := start(t, freeAddr(t), filepath.Join(dir, "agentik.db"),
		"OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG="+mcp, "AGENTIK_API_KEYS="+key)
	auth := map[string]string{"Authorization": "Bearer " + key}
	waitTools(t, p, auth)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	type stream struct {
		Text   string
		Seqs   []int
		Types  []string
		ID     string
		Status string
	}
	var got struct {
		Plain struct {
			ID, Text, Status, Object, Conversation string
			Usage                                  struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
				TotalTokens  int `json:"total_tokens"`
			}
		}
		Streamed  stream
		Retrieved struct{ Text, Status string }
		Previous  struct {
			Text, Conversation, Previous, Branch string
			BranchConversation                   string `json:"branch_conversation"`
		}
		Resumed struct {
			Before, After       []int
			Text, Final, Status string
			Background          bool
		}
		Helper     struct{ Text, Final string }
		Foreground struct {
			Seqs         []int
			Text, Status string
		}
		Cancel   struct{ Queued, Status, Retrieved string }
		Function struct{ Name, Status, Answer string }
		MCP      struct {
			Status  string
			Request *struct{ Name, Server string }
			Call    *struct{ Output, Approval, Arguments string }
			Answer  string
		} `json:"mcp"`
		Temp struct {
			Text, Streamed string
			Store, Gone    bool
			Conversation   *struct{ ID string }
		}
		Shaped struct {
			Status, Instructions, Format, Effort string
			Metadata                             map[string]string
			Temperature                          float64
			ToolChoice                           string `json:"tool_choice"`
		}
		Conversations struct {
			ID, Object, Answer, In string
			Items                  []string
			Gone                   bool
		}
		Unknown struct {
			Refused     bool
			Status      int
			Code, Param string
			Type        string
			SDKError    bool `json:"sdk_error"`
		}
	}
	responsesNode(t, ctx, p, key, &got)

	if got.Plain.Text != "You said: hello responses" || got.Plain.Status != "completed" || got.Plain.Object != "response" ||
		got.Plain.Usage.TotalTokens == 0 || !strings.HasPrefix(got.Plain.ID, "resp_") || got.Plain.Conversation == "" {
		t.Errorf("plain %+v", got.Plain)
	}
	s := got.Streamed
	if s.Text != llmtest.Tokens(30) || !contiguous(s.Seqs) || s.Types[0] != "response.created" || s.Types[len(s.Types)-1] != "response.completed" || s.Status != "completed" {
		t.Errorf("streamed %+v", s)
	}
	if got.Retrieved.Text != got.Plain.Text || got.Retrieved.Status != "completed" {
		t.Errorf("retrieved %+v", got.Retrieved)
	}
	if got.Previous.Text != "You said: second" || got.Previous.Conversation != got.Plain.Conversation || got.Previous.Previous != got.Plain.ID ||
		got.Previous.Branch != "You said: branch" || got.Previous.BranchConversation != got.Plain.Conversation {
		t.Errorf("previous %+v", got.Previous)
	}
	// The branch is the active path: hello, its answer, branch, its
	// answer; the second exchange is kept on the other branch.
	var hist struct{ Messages []agent.Message }
	requestJSON(t, "GET", p.url("/agentik/conversations/"+got.Plain.Conversation+"/messages"), "", auth, &hist)
	var path []string
	for _, m := range hist.Messages {
		if m.Type == agent.MessageUser {
			path = append(path, m.Content[0].Body)
		}
	}
	if strings.Join(path, ",") != "hello responses,branch" {
		t.Errorf("active path's user messages %v", path)
	}
	requestJSON(t, "GET", p.url("/agentik/conversations/"+got.Plain.Conversation+"/messages?branch=all"), "", auth, &hist)
	if len(hist.Messages) != 6 {
		t.Errorf("all branches hold %d messages, want 6", len(hist.Messages))
	}

	r := got.Resumed
	if r.Text != llmtest.Tokens(200) || r.Final != r.Text || r.Status != "completed" || !r.Background ||
		!contiguous(append(append([]int{}, r.Before...), r.After...)) || len(r.After) == 0 {
		t.Errorf("resumed: text %q, final %q, status %s, before %v, after %d events", r.Text, r.Final, r.Status, r.Before, len(r.After))
	}
	if fg := got.Foreground; fg.Text != llmtest.Tokens(100) || !contiguous(fg.Seqs) || fg.Status != "completed" {
		t.Errorf("a dropped foreground stream resumed: %+v", fg)
	}
	if got.Helper.Text != llmtest.Tokens(200) || got.Helper.Final != got.Helper.Text {
		t.Errorf("the SDK's resume helper gave %q", got.Helper.Text)
	}
	if got.Cancel.Status != "cancelled" || got.Cancel.Retrieved != "cancelled" {
		t.Errorf("cancel %+v", got.Cancel)
	}
	if got.Function.Name != "get_time" || got.Function.Status != "completed" || got.Function.Answer != "tool said: noon" {
		t.Errorf("function tool %+v", got.Function)
	}
	m := got.MCP
	if m.Request == nil || m.Request.Name != "echo" || m.Request.Server != "everything" || m.Call == nil ||
		!strings.Contains(m.Call.Output, "ping") || m.Call.Arguments != `{"message":"ping"}` || !strings.HasPrefix(m.Call.Approval, "mcpr_") || !strings.Contains(m.Answer, "ping") {
		t.Errorf("mcp tool %+v %+v %+v", m, m.Request, m.Call)
	}
	if !got.Unknown.Refused || got.Unknown.Status != 404 || got.Unknown.Code != "model_not_found" || got.Unknown.Param != "model" || !got.Unknown.SDKError {
		t.Errorf("unknown model %+v", got.Unknown)
	}
	if tp := got.Temp; tp.Text != "You said: not kept" || tp.Streamed != "You said: not kept either" || tp.Store || !tp.Gone || tp.Conversation != nil {
		t.Errorf("store: false %+v", tp)
	}
	var convs struct{ Conversations []agent.Conversation }
	requestJSON(t, "GET", p.url("/agentik/conversations?limit=1000"), "", auth, &convs)
	for _, c := range convs.Conversations {
		if c.Temp {
			t.Errorf("a store: false response left its temp conversation %s", c.ID)
		}
	}
	sh := got.Shaped
	if sh.Status != "completed" || sh.Instructions != "Answer in JSON." || sh.Format != "json_schema" || sh.Effort != "low" || sh.Temperature != 0.5 || sh.ToolChoice != "required" || sh.Metadata["run"] != "shaped" {
		t.Errorf("shaped response echoes %+v", sh)
	}
	shapedSeen := false
	for _, req := range fake.Requests() {
		var body struct {
			Messages []struct {
				Role    string
				Content string
			}
			ResponseFormat struct {
				Type       string
				JSONSchema struct{ Name string } `json:"json_schema"`
			} `json:"response_format"`
			ToolChoice        string   `json:"tool_choice"`
			ReasoningEffort   string   `json:"reasoning_effort"`
			ParallelToolCalls *bool    `json:"parallel_tool_calls"`
			Temperature       float64  `json:"temperature"`
			TopP              float64  `json:"top_p"`
			MaxTokens         int      `json:"max_tokens"`
			Stop              []string `json:"stop"`
		}
		if json.Unmarshal(req.Body, &body) != nil || len(body.Messages) == 0 || body.Messages[len(body.Messages)-1].Content != "shaped" {
			continue
		}
		shapedSeen = true
		if body.ResponseFormat.Type != "json_schema" || body.ResponseFormat.JSONSchema.Name != "answer" || body.ToolChoice != "required" ||
			body.ReasoningEffort != "low" || body.ParallelToolCalls == nil || *body.ParallelToolCalls || body.Temperature != 0.5 ||
			body.TopP < 0.89 || body.MaxTokens != 64 || body.Messages[0].Role != "system" || body.Messages[0].Content != "Answer in JSON." {
			t.Errorf("the model was asked %s", req.Body)
		}
	}
	if !shapedSeen {
		t.Error("the shaped response never reached the model")
	}
	cv := got.Conversations
	want := "message:user:my color is blue,message:assistant:noted,message:user:which color?,message:assistant:You said: which color?"
	if cv.Object != "conversation" || cv.Answer != "You said: which color?" || cv.In != cv.ID || strings.Join(cv.Items, ",") != want || !cv.Gone {
		t.Errorf("conversations %+v", cv)
	}
	// The model saw the items as history.
	saw := false
	for _, req := range fake.Requests() {
		if n := len(req.Messages); n >= 4 && req.Messages[n-1].Content == "which color?" && req.Messages[n-3].Content == "my color is blue" && req.Messages[n-2].Content == "noted" {
			saw = true
		}
	}
	if !saw {
		t.Error("the model did not see the conversation's items before the response's input")
	}

	// A response continuing a stored one is live on a WebSocket
	// subscription of its conversation.
	ws, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/agentik/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	var conv agent.Conversation
	requestJSON(t, "GET", p.url("/agentik/conversations/"+got.Plain.Conversation), "", auth, &conv)
	// Live only (no after): subscribed before the response starts.
	sub := fmt.Sprintf(`{"op":"subscribe","id":"1","stream":"conversation","conversation_id":%q}`, conv.ID)
	if err := ws.Write(ctx, websocket.MessageText, []byte(sub)); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var f struct{ Type string }
		if json.Unmarshal(b, &f) == nil && f.Type == "reply" {
			if !strings.Contains(string(b), `"ok":true`) {
				t.Fatalf("subscribe: %s", b)
			}
			break
		}
	}
	var live struct{ ID string }
	requestJSON(t, "POST", p.url("/v1/responses"), `{"model":"fake","input":"seen live","previous_response_id":"`+got.Plain.ID+`"}`, auth, &live)
	if got := turnText(t, ctx, ws, "seen live"); got != "You said: seen live" {
		t.Errorf("the WebSocket subscriber saw %q", got)
	}

	badInput(t, p, auth, fake, got.Plain.ID, got.Function)
}

// turnText reads a WebSocket subscription until the end of the turn whose
// user message is user, and returns that turn's streamed answer text (it
// may arrive in several append_text events, so it is judged whole).
func turnText(t *testing.T, ctx context.Context, ws *websocket.Conn, user string) string {
	t.Helper()
	var text strings.Builder
	sawUser := false
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
			sawUser = len(ev.Message.Content) > 0 && ev.Message.Content[0].Body == user
		case ev.Type == agent.EventAppendText && sawUser:
			text.WriteString(ev.Text)
		case ev.Type == agent.EventEnd && sawUser:
			return text.String()
		}
	}
}

// badInput checks the bad-input table: each request is refused with an
// OpenAI-shaped 4xx naming the field, and nothing is stored.
func badInput(t *testing.T, p *proc, auth map[string]string, fake *llmtest.Server, plainID string, _ any) {
	t.Helper()
	var before struct{ Total int }
	requestJSON(t, "GET", p.url("/agentik/conversations"), "", auth, &before)
	requests := len(fake.Requests())
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		param                    string
	}{
		{"unknown model", "POST", "/v1/responses", `{"model":"nope","input":"hi"}`, 404, "model"},
		{"no model", "POST", "/v1/responses", `{"input":"hi"}`, 400, "model"},
		{"empty input", "POST", "/v1/responses", `{"model":"fake","input":""}`, 400, "input"},
		{"empty list", "POST", "/v1/responses", `{"model":"fake","input":[]}`, 400, "input"},
		{"unknown previous", "POST", "/v1/responses", `{"model":"fake","input":"hi","previous_response_id":"resp_nope"}`, 404, "previous_response_id"},
		{"unknown call id", "POST", "/v1/responses", `{"model":"fake","previous_response_id":"` + plainID + `","input":[{"type":"function_call_output","call_id":"call_nope","output":"x"}]}`, 400, "input[0].call_id"},
		{"unknown call id, new", "POST", "/v1/responses", `{"model":"fake","input":[{"type":"function_call_output","call_id":"call_nope","output":"x"}]}`, 400, "input[0].call_id"},
		{"unsupported parameter", "POST", "/v1/responses", `{"model":"fake","input":"hi","frobnicate":1}`, 400, "frobnicate"},
		{"hosted tool", "POST", "/v1/responses", `{"model":"fake","input":"hi","tools":[{"type":"web_search"}]}`, 400, "tools[0].type"},
		{"bad format", "POST", "/v1/responses", `{"model":"fake","input":"hi","text":{"format":{"type":"xml"}}}`, 400, "text.format.type"},
		{"background without store", "POST", "/v1/responses", `{"model":"fake","input":"hi","background":true,"store":false}`, 400, "background"},
		{"starting_after beyond the end", "GET", "/v1/responses/" + plainID + "?stream=true&starting_after=100000", "", 400, "starting_after"},
		{"unknown response", "GET", "/v1/responses/resp_nope", "", 404, ""},
	} {
		req, _ := http.NewRequest(c.method, p.url(c.path), strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range auth {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct {
				Message, Type, Code string
				Param               *string
			}
		}
		_ = json.Unmarshal(b, &e)
		param := ""
		if e.Error.Param != nil {
			param = *e.Error.Param
		}
		if resp.StatusCode != c.status || param != c.param || e.Error.Message == "" || e.Error.Type != "invalid_request_error" {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, b)
		}
	}
	var after struct{ Total int }
	requestJSON(t, "GET", p.url("/agentik/conversations"), "", auth, &after)
	if after.Total != before.Total || len(fake.Requests()) != requests {
		t.Errorf("bad input stored something: %d conversations before, %d after; %d model requests before, %d after", before.Total, after.Total, requests, len(fake.Requests()))
	}
}

// TestResponsesResumeAfterKill9 reads part of a background response's
// stream, kills the real binary with SIGKILL, restarts it, and resumes the
// stream with starting_after: every event once, in order, and the
// response ends failed with interrupted_by_restart, its text the text seen
// before the kill and after the resume.
func TestResponsesResumeAfterKill9(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	db := filepath.Join(t.TempDir(), "agentik.db")
	addr := freeAddr(t)
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake"}
	p := start(t, addr, db, env...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var first struct {
		Start struct {
			Text string
			Seqs []int
			ID   string
		}
	}
	responsesNode(t, ctx, p, "", &first, "start")
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	p = start(t, addr, db, env...)
	seqs := first.Start.Seqs
	var second struct {
		Finish struct {
			After        []int
			Text, Status string
			Final        string
			Error        *struct{ Code, Message string }
		}
	}
	responsesNode(t, ctx, p, "", &second, "finish", first.Start.ID, fmt.Sprint(seqs[len(seqs)-1]))
	f := second.Finish
	if !contiguous(append(append([]int{}, seqs...), f.After...)) {
		t.Errorf("events before the kill %v, after the resume %v", seqs, f.After)
	}
	// The turn was continued after the restart: one response, completed,
	// its text what was seen before the kill and the rest, once.
	if f.Status != "completed" || f.Error != nil {
		t.Errorf("after the restart the response is %s (%+v)", f.Status, f.Error)
	}
	if whole := first.Start.Text + f.Text; whole != f.Final || !strings.HasPrefix(whole, first.Start.Text) || len(first.Start.Text) == 0 || len(f.Text) == 0 {
		t.Errorf("text before %q + after %q, final %q", first.Start.Text, f.Text, f.Final)
	}
}

// TestResponsesClients runs the two clients whose default API is
// Responses against the real binary: @openai/agents runs an agent with a
// function tool (the call comes back, the SDK runs it and sends the whole
// history again), and @ai-sdk/openai's openai(model) generates and streams.
func TestResponsesClients(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	const key = "sk-agentik-test"
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS="+key)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "responses_clients.mjs"))
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+p.addr, "AGENTIK_KEY="+key, "OPENAI_AGENTS_DISABLE_TRACING=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\nagentik logs:\n%s", err, stderr.String(), p.logs)
	}
	var got struct {
		Agents struct {
			Final    string
			Ran      int
			Items    []string
			Streamed string
		}
		Generate struct {
			Text, Finish string
			OutputTokens int `json:"output_tokens"`
		}
		Stream  struct{ Text, Finish string }
		Failed  *struct{ Name, Message string }
		Retried struct{ Attempts, Users int }
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if got.Agents.Final != "tool said: noon" || got.Agents.Ran != 1 || got.Agents.Streamed != "You said: hello agents" {
		t.Errorf("@openai/agents %+v", got.Agents)
	}
	if got.Generate.Text != "You said: hello ai sdk" || got.Generate.Finish != "stop" || got.Generate.OutputTokens == 0 {
		t.Errorf("generateText %+v", got.Generate)
	}
	if got.Stream.Text != llmtest.Tokens(12) || got.Stream.Finish != "stop" {
		t.Errorf("streamText %+v", got.Stream)
	}
	if r := got.Retried; r.Attempts != 2 || r.Users != 1 {
		t.Errorf("the AI SDK's retry of a failed turn: %+v, want 2 attempts and 1 user message stored", r)
	}
	if f := got.Failed; f == nil || f.Name != "AI_APICallError" || strings.Contains(f.Message, "Invalid JSON") || !strings.Contains(f.Message, "400") {
		t.Errorf("generateText of a failed response: %+v, want the model's error as an API call error", f)
	}
}

// TestResponsesIsolation: a member's responses and conversations are not
// found for another member, on every route, exactly like unknown ids.
func TestResponsesIsolation(t *testing.T) {
	t.Parallel()
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"))
	u := tm.p.url
	var r struct {
		ID           string
		Conversation struct{ ID string }
	}
	must(t, tm.ann.key, "POST", u("/v1/responses"), `{"model":"fake","input":"ann's secret"}`, &r)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/responses/" + r.ID, ""},
		{"GET", "/v1/responses/" + r.ID + "?stream=true", ""},
		{"GET", "/v1/responses/" + r.ID + "/input_items", ""},
		{"POST", "/v1/responses/" + r.ID + "/cancel", ""},
		{"DELETE", "/v1/responses/" + r.ID, ""},
		{"POST", "/v1/responses", `{"model":"fake","input":"x","previous_response_id":"` + r.ID + `"}`},
		{"POST", "/v1/responses", `{"model":"fake","input":"x","conversation":"` + r.Conversation.ID + `"}`},
		{"GET", "/v1/conversations/" + r.Conversation.ID, ""},
		{"GET", "/v1/conversations/" + r.Conversation.ID + "/items", ""},
		{"POST", "/v1/conversations/" + r.Conversation.ID + "/items", `{"items":[{"role":"user","content":"x"}]}`},
		{"DELETE", "/v1/conversations/" + r.Conversation.ID, ""},
	} {
		code, b := call(t, tm.bob.key, c.method, u(c.path), c.body)
		unknownPath := strings.NewReplacer(r.ID, "resp_01nope", r.Conversation.ID, "01nope").Replace(c.path)
		unknownBody := strings.NewReplacer(r.ID, "resp_01nope", r.Conversation.ID, "01nope").Replace(c.body)
		ucode, ub := call(t, tm.bob.key, c.method, u(unknownPath), unknownBody)
		masked := strings.NewReplacer(r.ID, "resp_01nope", r.Conversation.ID, "01nope").Replace(string(b))
		if code != 404 || ucode != 404 || masked != string(ub) {
			t.Errorf("bob %s %s: %d %s; an unknown id: %d %s", c.method, c.path, code, b, ucode, ub)
		}
	}
	var again struct {
		OutputText string `json:"output_text"`
	}
	must(t, tm.ann.key, "GET", u("/v1/responses/"+r.ID), "", &again)
	if again.OutputText != "You said: ann's secret" {
		t.Errorf("ann reads her response back as %q", again.OutputText)
	}
}
