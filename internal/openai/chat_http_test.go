package openai_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

// postV1 posts body to the OpenAI facade and returns the response.
func postV1(t *testing.T, ts *testServer, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", ts.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type oaiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

type oaiCompletion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent string  `json:"reasoning_content"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *agent.Usage `json:"usage"`
}

func decodeResp(t *testing.T, resp *http.Response, wantStatus int, v any) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, wantStatus, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// dataLines reads an SSE body's data lines until [DONE] or EOF.
func dataLines(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
			if d == "[DONE]" {
				break
			}
		}
	}
	return out
}

func TestOpenAIModels(t *testing.T) {
	ts := newTestServer(t)
	resp, err := http.Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	decodeResp(t, resp, 200, &list)
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "fake" || list.Data[0].Object != "model" {
		t.Fatalf("models %+v", list)
	}
}

func TestOpenAICompletion(t *testing.T) {
	ts := newTestServer(t)
	resp := postV1(t, ts, `{"model":"fake","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"}],"temperature":0.2,"response_format":{"type":"text"},"modalities":["text"]}`)
	var c oaiCompletion
	decodeResp(t, resp, 200, &c)
	if c.Object != "chat.completion" || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Model != "fake" || len(c.Choices) != 1 {
		t.Fatalf("completion %+v", c)
	}
	ch := c.Choices[0]
	if ch.Message.Role != "assistant" || ch.Message.Content == nil || *ch.Message.Content != "You said: hello there" || ch.FinishReason != "stop" {
		t.Fatalf("choice %+v", ch)
	}
	if c.Usage == nil || c.Usage.TotalTokens == 0 {
		t.Fatalf("usage %+v", c.Usage)
	}
	// The request's system message replaced agentik's prompt.
	req := ts.Fake.Requests()[0]
	if req.Messages[0].Role != "system" || req.Messages[0].Content != "be brief" {
		t.Fatalf("model saw %+v", req.Messages)
	}
	// Stateless: the temp conversation is gone once answered.
	waitNoTemps(t, ts)
}

func waitNoTemps(t *testing.T, ts *testServer) {
	t.Helper()
	// Follow the agent stream live, then look: a deletion after the
	// subscription cannot be missed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := ts.Broker.Subscribe(ctx, broker.Stream{Kind: broker.StreamAgent}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for {
		cs, _, err := ts.Runner.Temps().Conversations(context.Background(), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 0 {
			return
		}
		for deleted := false; !deleted; {
			it, err := sub.Next(ctx)
			if err != nil {
				t.Fatalf("temp conversations left: %+v (%v)", cs, err)
			}
			if it.CaughtUp {
				continue
			}
			if ev, err := it.Event.Decode(); err == nil && ev.Agent != nil && ev.Agent.Type == agent.AgentDeleted {
				deleted = true
			}
		}
	}
}

func TestOpenAIHistoryAndReasoning(t *testing.T) {
	ts := newTestServer(t)
	img := "iVBORw0KGgo="
	body := `{"model":"fake","messages":[
		{"role":"user","content":"first"},
		{"role":"assistant","content":"You said: first"},
		{"role":"user","content":[{"type":"text","text":"[[reasoning]] second"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + img + `"}}]}]}`
	var c oaiCompletion
	decodeResp(t, postV1(t, ts, body), 200, &c)
	if got := c.Choices[0].Message.ReasoningContent; got != "Thinking about: second" {
		t.Fatalf("reasoning_content %q", got)
	}
	msgs := ts.Fake.Requests()[0].Messages
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,user" || msgs[2].Content != "You said: first" {
		t.Fatalf("model saw %+v", msgs)
	}
}

// TestOpenAIStreamShape compares the facade's chunks with the chunks of
// the fake model, which speaks OpenAI's own format.
func TestOpenAIStreamShape(t *testing.T) {
	ts := newTestServer(t)
	ref := httptest.NewServer(llmtest.NewServer())
	defer ref.Close()
	// both streams the same request through the facade and straight from
	// the fake model.
	both := func(body string) (ours, theirs []string) {
		resp := postV1(t, ts, body)
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		ours = dataLines(t, resp.Body)
		rr, err := http.Post(ref.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer rr.Body.Close()
		theirs = dataLines(t, rr.Body)
		if ours[len(ours)-1] != "[DONE]" || theirs[len(theirs)-1] != "[DONE]" {
			t.Fatalf("no [DONE]: %v", ours)
		}
		// Each kind of chunk (first, reasoning, content, tool call, finish,
		// usage) has the same keys at every level as OpenAI's.
		// Reasoning goes out under both names (reasoning_content, as the
		// fake model sends it, and reasoning, which the Agents SDK reads):
		// the second is checked below.
		got := chunkShapes(t, ours)
		for i, k := range got {
			got[i] = strings.ReplaceAll(k, " .choices[].delta.reasoning ", " ")
		}
		sort.Strings(got)
		got = slices.Compact(got)
		if want := chunkShapes(t, theirs); !reflect.DeepEqual(got, want) {
			t.Errorf("chunk shapes of %s\n got %v\nwant %v", body, got, want)
		}
		return ours, theirs
	}
	both(`{"model":"fake","stream":true,"tools":[{"type":"function","function":{"name":"lookup"}}],"messages":[{"role":"user","content":"[[tool=lookup args={\"q\":1}]]"}]}`)
	body := `{"model":"fake","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"[[reasoning]] one two three"}]}`
	ours, _ := both(body)
	var text, reasoning string
	var usage *agent.Usage
	for _, l := range ours[:len(ours)-1] {
		var ch struct {
			Object  string
			Choices []struct {
				Delta struct {
					Content          string
					ReasoningContent string `json:"reasoning_content"`
					Reasoning        string `json:"reasoning"`
				}
			}
			Usage *agent.Usage
		}
		if err := json.Unmarshal([]byte(l), &ch); err != nil {
			t.Fatal(err)
		}
		if ch.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %s", l)
		}
		for _, c := range ch.Choices {
			text += c.Delta.Content
			reasoning += c.Delta.ReasoningContent
			if c.Delta.Reasoning != c.Delta.ReasoningContent {
				t.Fatalf("reasoning %q, reasoning_content %q: want the same text under both names", c.Delta.Reasoning, c.Delta.ReasoningContent)
			}
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
	}
	if text != "You said: one two three" || reasoning != "Thinking about: one two three" || usage == nil || usage.TotalTokens == 0 {
		t.Fatalf("text %q reasoning %q usage %+v", text, reasoning, usage)
	}
}

// chunkShapes is the set of key paths of each distinct chunk kind.
func chunkShapes(t *testing.T, lines []string) []string {
	seen := map[string]bool{}
	for _, l := range lines {
		if l == "[DONE]" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		var keys []string
		walkKeys("", v, &keys)
		sort.Strings(keys)
		seen[strings.Join(keys, " ")] = true
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func walkKeys(prefix string, v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if k == "role" || k == "reasoning_content" || k == "content" {
				*out = append(*out, prefix+".delta") // what a delta carries varies by kind
				continue
			}
			*out = append(*out, prefix+"."+k)
			walkKeys(prefix+"."+k, c, out)
		}
	case []any:
		for _, c := range x {
			walkKeys(prefix+"[]", c, out)
		}
	}
}

func TestOpenAIClientTool(t *testing.T) {
	ts := newTestServer(t)
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","description":"the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	var c oaiCompletion
	decodeResp(t, postV1(t, ts, `{"model":"fake",`+tools+`,"messages":[{"role":"user","content":"[[tool=get_weather args={\"city\":\"Oslo\"}]]"}]}`), 200, &c)
	ch := c.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "get_weather" ||
		ch.Message.ToolCalls[0].Function.Arguments != `{"city":"Oslo"}` || ch.Message.ToolCalls[0].Type != "function" {
		t.Fatalf("choice %+v", ch)
	}
	if ch.Message.Content != nil {
		t.Fatalf("content %q with tool calls, want null", *ch.Message.Content)
	}
	offered := false
	for _, tl := range ts.Fake.Requests()[0].Tools {
		offered = offered || tl.Name == "get_weather"
	}
	if !offered {
		t.Fatalf("the client tool was not offered: %+v", ts.Fake.Requests()[0].Tools)
	}
	call := ch.Message.ToolCalls[0]
	// The client runs it and sends the result with the history.
	next := `{"model":"fake",` + tools + `,"messages":[{"role":"user","content":"[[tool=get_weather args={\"city\":\"Oslo\"}]]"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"` + call.ID + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		{"role":"tool","tool_call_id":"` + call.ID + `","content":"sunny"}]}`
	decodeResp(t, postV1(t, ts, next), 200, &c)
	if got := *c.Choices[0].Message.Content; got != "tool said: sunny" || c.Choices[0].FinishReason != "stop" {
		t.Fatalf("after the tool: %q %s", got, c.Choices[0].FinishReason)
	}
}

func TestOpenAIStreamedClientTool(t *testing.T) {
	ts := newTestServer(t)
	body := `{"model":"fake","stream":true,"tools":[{"type":"function","function":{"name":"lookup"}}],"messages":[{"role":"user","content":"[[tool=lookup]]"}]}`
	lines := dataLines(t, postV1(t, ts, body).Body)
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, `"tool_calls":[{"index":0,"id":"`) || !strings.Contains(all, `"finish_reason":"tool_calls"`) || !strings.Contains(all, `"name":"lookup"`) {
		t.Fatalf("stream:\n%s", all)
	}
}

func TestOpenAIBadInput(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct {
		name, body string
		status     int
		param      string
		code       string
	}{
		{"unknown model", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "model_not_found"},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model", "bad_request"},
		{"empty messages", `{"model":"fake","messages":[]}`, 400, "messages", "bad_request"},
		{"last from assistant", `{"model":"fake","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`, 400, "messages[1].role", "bad_request"},
		{"n", `{"model":"fake","n":2,"messages":[{"role":"user","content":"hi"}]}`, 400, "n", "bad_request"},
		{"unsupported", `{"model":"fake","functions":[],"messages":[{"role":"user","content":"hi"}]}`, 400, "functions", "bad_request"},
		{"bad format", `{"model":"fake","response_format":{"type":"xml"},"messages":[{"role":"user","content":"hi"}]}`, 400, "response_format.type", "bad_request"},
		{"schema without name", `{"model":"fake","response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}},"messages":[{"role":"user","content":"hi"}]}`, 400, "response_format.json_schema.name", "bad_request"},
		{"audio", `{"model":"fake","modalities":["text","audio"],"messages":[{"role":"user","content":"hi"}]}`, 400, "modalities[1]", "bad_request"},
		{"tool_choice", `{"model":"fake","tool_choice":"sometimes","messages":[{"role":"user","content":"hi"}]}`, 400, "tool_choice", "bad_request"},
		{"tool_choice without name", `{"model":"fake","tool_choice":{"type":"function","function":{}},"messages":[{"role":"user","content":"hi"}]}`, 400, "tool_choice.function.name", "bad_request"},
		{"remote image", `{"model":"fake","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, 400, "messages[0].content[0].image_url.url", "bad_request"},
		{"bad role", `{"model":"fake","messages":[{"role":"wizard","content":"x"},{"role":"user","content":"hi"}]}`, 400, "messages[0].role", "bad_request"},
		{"bad tool name", `{"model":"fake","tools":[{"type":"function","function":{"name":"a b"}}],"messages":[{"role":"user","content":"hi"}]}`, 400, "tools", "bad_request"},
		{"wrong type", `{"model":"fake","stream":"yes","messages":[{"role":"user","content":"hi"}]}`, 400, "stream", "bad_request"},
		{"unknown conversation", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`, 404, "", "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h []string
			if tc.name == "unknown conversation" {
				h = []string{protocol.ConversationHeader, "nope"}
			}
			var e oaiError
			decodeResp(t, postV1(t, ts, tc.body, h...), tc.status, &e)
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if param != tc.param || e.Error.Code != tc.code || e.Error.Message == "" || e.Error.Type != "invalid_request_error" {
				t.Fatalf("error %+v (param %q)", e.Error, param)
			}
		})
	}
	if n := ts.Fake.Requests(); len(n) != 0 {
		t.Fatalf("bad input reached the model: %d requests", len(n))
	}
	cs, _, _ := ts.Runner.Conversations(context.Background(), 0, 10)
	if len(cs) != 0 {
		t.Fatalf("bad input left conversations: %+v", cs)
	}
}

// TestOpenAIStatelessDisconnect: a client that leaves mid-stream stops a
// stateless turn.
func TestOpenAIStatelessDisconnect(t *testing.T) {
	ts := newTestServer(t)
	hold := make(chan struct{})
	defer close(hold)
	ts.Fake.Enqueue(llmtest.Reply{Text: "never sent", Hold: hold})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions", strings.NewReader(`{"model":"fake","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // the first chunk: the turn runs
		t.Fatal(err)
	}
	if cs, _, _ := ts.Runner.Temps().Conversations(context.Background(), 0, 10); len(cs) != 1 || !cs[0].Running {
		t.Fatalf("temps %+v, want the request's, running", cs)
	}
	cancel()
	resp.Body.Close()
	waitNoTemps(t, ts) // interrupted and deleted while the model still holds
}

// TestOpenAIStoredConversation: with the header, the request continues a
// stored conversation; only its last user message is new, the turn is in
// the conversation's history and stream, and a disconnect does not stop it.
func TestOpenAIStoredConversation(t *testing.T) {
	ts := newTestServer(t)
	conv, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	var c oaiCompletion
	decodeResp(t, postV1(t, ts, `{"model":"fake","messages":[{"role":"user","content":"ignored old"},{"role":"assistant","content":"x"},{"role":"user","content":"first"}]}`, protocol.ConversationHeader, conv.ID), 200, &c)
	if *c.Choices[0].Message.Content != "You said: first" {
		t.Fatalf("answer %+v", c)
	}
	msgs := ts.Fake.Requests()[0].Messages
	if len(msgs) != 2 || msgs[1].Content != "first" {
		t.Fatalf("model saw %+v, want the stored history and the new message only", msgs)
	}

	// A client leaves mid-stream: the turn goes on and is stored.
	hold := make(chan struct{})
	ts.Fake.Enqueue(llmtest.Reply{Text: "kept going", Hold: hold})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions", strings.NewReader(`{"model":"fake","stream":true,"messages":[{"role":"user","content":"second"}]}`))
	req.Header.Set(protocol.ConversationHeader, conv.ID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	ended := turnEnds(t, ts, conv.ID)
	cancel()
	resp.Body.Close()
	close(hold)
	ended()
	ms, err := ts.Runner.Messages(context.Background(), agent.MessageQuery{ConversationID: conv.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ms); n != 4 || ms[3].Type != agent.MessageAssistant || ms[3].Content[0].Body != "kept going" || ms[3].Interrupted {
		t.Fatalf("history %+v", ms)
	}
}

// TestOpenAIStreamKeepalive: while nothing flows (the model or a tool is
// slow) a stream gets comment lines, which OpenAI clients skip.
func TestOpenAIStreamKeepalive(t *testing.T) {
	ts := newTestServer(t, func(g *rig) { g.heartbeat = 5 * time.Millisecond })
	hold := make(chan struct{})
	ts.Fake.Enqueue(llmtest.Reply{Text: "late", Hold: hold})
	resp := postV1(t, ts, `{"model":"fake","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == ": keepalive\n" {
			break
		}
	}
	close(hold)
	lines := dataLines(t, br)
	if lines[len(lines)-1] != "[DONE]" || !strings.Contains(strings.Join(lines, ""), `"content":"late"`) {
		t.Fatalf("after the keepalive: %v", lines)
	}
}

// TestOpenAIServerToolRounds: the model's text before and after a
// server-side tool arrive as one content, the rounds a paragraph apart;
// the client never sees the server-side call.
func TestOpenAIServerToolRounds(t *testing.T) {
	ts := newTestServer(t, func(g *rig) { g.tools = echoTools{} })
	ts.Fake.Enqueue(llmtest.Reply{Text: "Let me look.", ToolCalls: []agent.ToolCall{{ID: "s1", Name: "srv__echo", Arguments: `{}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "Found it."})
	var c oaiCompletion
	decodeResp(t, postV1(t, ts, `{"model":"fake","messages":[{"role":"user","content":"go"}]}`), 200, &c)
	ch := c.Choices[0]
	if *ch.Message.Content != "Let me look.\n\nFound it." || ch.FinishReason != "stop" || len(ch.Message.ToolCalls) != 0 {
		t.Fatalf("choice %+v (content %q)", ch, *ch.Message.Content)
	}
	if n := len(ts.Fake.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
}

// echoTools is one server-side tool that answers "echoed".
type echoTools struct{}

func (echoTools) Specs(context.Context) []agent.ToolSpec {
	return []agent.ToolSpec{{Name: "srv__echo"}}
}

func (echoTools) Call(context.Context, string, string) (string, error) { return "echoed", nil }
