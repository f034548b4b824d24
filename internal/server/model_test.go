package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/server"
)

// twoProviders is two fake model servers as providers "a" (alpha-1, and
// alpha-2 with vision) and "b" (auto: beta), b down until up is set.
type twoProviders struct {
	A, B *llmtest.Server
	Up   atomic.Bool // b answers
	P    *llm.Providers
}

func newTwoProviders(t testing.TB) *twoProviders {
	t.Helper()
	tp := &twoProviders{A: llmtest.NewServer(llmtest.WithModels("alpha-1", "alpha-2")), B: llmtest.NewServer(llmtest.WithModels("beta"))}
	tsA := httptest.NewServer(tp.A)
	tsB := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !tp.Up.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		tp.B.ServeHTTP(w, r)
	}))
	t.Cleanup(tsA.Close)
	t.Cleanup(tsB.Close)
	cfg, err := llm.ParseProviders([]byte(`{"providers":{
		"a":{"base_url":"`+tsA.URL+`/v1","models":["alpha-1",{"name":"alpha-2","vision":true,"context_window":32000}],"context_window":8000},
		"b":{"base_url":"`+tsB.URL+`/v1","models":"auto","vision":true}},
		"default":"a/alpha-1"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tp.P, err = llm.NewProviders(cfg, llm.ProvidersOptions{}); err != nil {
		t.Fatal(err)
	}
	tp.P.Check(t.Context())
	return tp
}

func withProviders(tp *twoProviders, titles string) rigOption {
	return func(a *agent.Config, _ *server.Config) {
		a.Model, a.Catalog, a.Windows, a.Titles = tp.P, tp.P, tp.P, titles
	}
}

// sendOK sends text and reads the turn to its end.
func (ts *testServer) sendOK(t testing.TB, id, text string) string {
	t.Helper()
	return names(ts.send(t, id, text))
}

func TestModelsList(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	ts := newTestServer(t, withProviders(tp, ""))
	var got protocol.ModelsResult
	ts.call(t, "GET", "/agentik/models", "", 200, &got)
	want := protocol.ModelsResult{Default: "a/alpha-1", Models: []agent.ModelInfo{
		{ID: "a/alpha-1", Provider: "a", Name: "alpha-1", ContextWindow: 8000, Available: true},
		{ID: "a/alpha-2", Provider: "a", Name: "alpha-2", ContextWindow: 32000, Vision: true, Available: true},
	}}
	if !jsonEqual(t, got, want) {
		t.Errorf("models with b down: %+v", got)
	}

	// b comes back: the next check lists its models; a is unaffected.
	tp.Up.Store(true)
	tp.P.Check(t.Context())
	w := dialWS(t, ts)
	defer w.close()
	w.ok(protocol.OpListModels, nil, &got)
	want.Models = append(want.Models, agent.ModelInfo{ID: "b/beta", Provider: "b", Name: "beta", ContextWindow: agent.DefaultContextWindow, Vision: true, Available: true})
	if !jsonEqual(t, got, want) {
		t.Errorf("models with b back: %+v", got)
	}
}

func jsonEqual(t testing.TB, a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Logf("got  %s\nwant %s", ja, jb)
		return false
	}
	return true
}

// TestConversationSwitchesProvider: a conversation created on a's model
// with its own system prompt and params is switched to b between turns;
// each fake receives the right model name, system prompt and params.
func TestConversationSwitchesProvider(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	tp.Up.Store(true)
	tp.P.Check(t.Context())
	ts := newTestServer(t, withProviders(tp, agent.TitlesFirstLine))

	var c agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"title":"t","model":"a/alpha-2","system_prompt":"Talk like a pirate.","params":{"temperature":0.2,"max_tokens":50}}`, 201, &c)
	if c.Model != "a/alpha-2" || c.SystemPrompt != "Talk like a pirate." || c.Params == nil || *c.Params.Temperature != 0.2 || *c.Params.MaxTokens != 50 {
		t.Fatalf("created %+v", c)
	}
	ts.sendOK(t, c.ID, "first")
	reqs := tp.A.Requests()
	if len(reqs) != 1 {
		t.Fatalf("a received %d requests", len(reqs))
	}
	r := reqs[0]
	if r.Model != "alpha-2" || r.Messages[0].Role != "system" || r.Messages[0].Content != "Talk like a pirate." ||
		r.Temperature == nil || *r.Temperature != 0.2 || r.MaxTokens != 50 || r.TopP != nil {
		t.Errorf("a received model %q, system %+v, body %s", r.Model, r.Messages[0], r.Body)
	}

	// Switch to b with another prompt and params: PATCH answers the
	// conversation, and an updated event carries what changed.
	ts.call(t, "PATCH", "/agentik/conversations/"+c.ID, `{"model":"b/beta","system_prompt":"Be terse.","params":{"top_p":0.5}}`, 200, &c)
	if c.Model != "b/beta" || c.SystemPrompt != "Be terse." || c.Params == nil || c.Params.Temperature != nil || *c.Params.TopP != 0.5 {
		t.Fatalf("patched %+v", c)
	}
	ts.sendOK(t, c.ID, "second")
	if n := len(tp.A.Requests()); n != 1 {
		t.Errorf("a received %d requests after the switch", n)
	}
	reqs = tp.B.Requests()
	if len(reqs) != 1 {
		t.Fatalf("b received %d requests", len(reqs))
	}
	r = reqs[0]
	if r.Model != "beta" || r.Messages[0].Content != "Be terse." || r.TopP == nil || *r.TopP != 0.5 || r.Temperature != nil || r.MaxTokens != 0 {
		t.Errorf("b received model %q, system %+v, body %s", r.Model, r.Messages[0], r.Body)
	}
	// The history went with it.
	if got := len(r.Messages); got != 4 { // system, first, answer, second
		t.Errorf("b received %d messages, want 4", got)
	}

	var page struct {
		Events []agent.AllEvent `json:"events"`
	}
	ts.call(t, "GET", "/agentik/events/replay?after_id=&limit=1000", "", 200, &page)
	var updated []*agent.AgentEvent
	for _, ev := range page.Events {
		if ev.Agent != nil && ev.Agent.Type == agent.AgentUpdated {
			updated = append(updated, ev.Agent)
		}
	}
	if len(updated) != 1 || *updated[0].Model != "b/beta" || *updated[0].SystemPrompt != "Be terse." || *updated[0].Params.TopP != 0.5 || updated[0].ConversationID != c.ID {
		t.Fatalf("updated events: %+v", updated)
	}

	// WS update_conversation: the title too.
	w := dialWS(t, ts)
	defer w.close()
	w.ok(protocol.OpUpdateConversation, map[string]any{"conversation_id": c.ID, "title": "renamed", "params": map[string]any{}}, &c)
	if c.Title != "renamed" || c.Params != nil || !c.UserTitled {
		t.Errorf("after update_conversation %+v", c)
	}
}

// TestSettingsBadInput: an unknown model, params out of range, image
// input to a model without vision: bad_request, and nothing changes.
func TestSettingsBadInput(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	ts := newTestServer(t, withProviders(tp, agent.TitlesFirstLine))
	var c agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"model":"a/alpha-1","params":{"temperature":1}}`, 201, &c)
	for _, tc := range []struct{ method, path, body, want string }{
		{"POST", "/agentik/conversations", `{"model":"z/nope"}`, `a/alpha-1, a/alpha-2`},
		{"POST", "/agentik/conversations", `{"params":{"temperature":2.5}}`, "temperature"},
		{"PATCH", "/agentik/conversations/" + c.ID, `{"model":"a/alpha-3"}`, `a/alpha-3\" is not configured; the models are: a/alpha-1, a/alpha-2`},
		{"PATCH", "/agentik/conversations/" + c.ID, `{"params":{"temperature":-0.1}}`, "between 0 and 2"},
		{"PATCH", "/agentik/conversations/" + c.ID, `{"params":{"max_tokens":0}}`, "max_tokens must be 1 or more"},
		{"PATCH", "/agentik/conversations/" + c.ID, `{"params":{"top_p":1.5}}`, "top_p"},
		{"PATCH", "/agentik/conversations/" + c.ID, `{"model":"a/alpha-2","params":{"top_p":2}}`, "top_p"},
		{"PATCH", "/agentik/conversations/" + c.ID, `{"title":""}`, "title"},
		{"PATCH", "/agentik/conversations/" + c.ID, `{"params":"hot"}`, "params"},
		{"POST", "/agentik/conversations/" + c.ID + "/send", `{"content":[{"type":"image","mime":"image/png","data":"iVBORw0KGgo="}]}`, "does not accept images"},
	} {
		resp := ts.do(t, tc.method, tc.path, tc.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"code":"bad_request"`) || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s %s: %d %s; want 400 saying %q", tc.method, tc.path, tc.body, resp.StatusCode, b, tc.want)
		}
	}
	var got agent.Conversation
	ts.call(t, "GET", "/agentik/conversations/"+c.ID, "", 200, &got)
	if got.Model != "a/alpha-1" || got.Params == nil || *got.Params.Temperature != 1 || got.MessageCount != 0 || got.Title != "" {
		t.Errorf("after bad input: %+v", got)
	}
	ts.call(t, "PATCH", "/agentik/conversations/nope", `{"model":"a/alpha-1"}`, 404, nil)

	// The same image to a model with vision goes through.
	ts.call(t, "PATCH", "/agentik/conversations/"+c.ID, `{"model":"a/alpha-2"}`, 200, nil)
	body := `{"content":[{"type":"image","mime":"image/png","data":"iVBORw0KGgo="},{"type":"text","body":"what is it"}]}`
	resp := ts.do(t, "POST", "/agentik/conversations/"+c.ID+"/send", body)
	readSSE(t, resp.Body, atEnd)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("image to a vision model: %d", resp.StatusCode)
	}
}

// logWatch is a slog handler that counts the messages logged.
type logWatch struct {
	mu   sync.Mutex
	msgs map[string]chan struct{}
}

// wait waits for one more msg.
func (l *logWatch) wait(t testing.TB, msg string) {
	t.Helper()
	select {
	case <-l.ch(msg):
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s logged", msg)
	}
}

func (l *logWatch) ch(msg string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.msgs == nil {
		l.msgs = map[string]chan struct{}{}
	}
	c := l.msgs[msg]
	if c == nil {
		c = make(chan struct{}, 100)
		l.msgs[msg] = c
	}
	return c
}

func (l *logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (l *logWatch) Handle(_ context.Context, r slog.Record) error {
	select {
	case l.ch(r.Message) <- struct{}{}:
	default:
	}
	return nil
}
func (l *logWatch) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logWatch) WithGroup(string) slog.Handler      { return l }

// TestTitleByModel: after the first answer the model names the
// conversation (≤ 8 words, with a renamed event); a later turn does not.
func TestTitleByModel(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	ts := newTestServer(t, withProviders(tp, agent.TitlesModel))
	var c agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{}`, 201, &c)
	tp.A.Enqueue(llmtest.Reply{Text: "Paris is the capital."})
	tp.A.Enqueue(llmtest.Reply{Text: "\"The Capital Of France And Some Other Very Long Words.\"\nextra line"})
	ts.sendOK(t, c.ID, "What is the capital of France?")
	want := "The Capital Of France And Some Other Very"
	waitTitle(t, ts, c.ID, want)
	reqs := tp.A.Requests()
	if len(reqs) != 2 || reqs[1].Model != "alpha-1" || !strings.Contains(reqs[1].Messages[1].Content, "Paris is the capital.") || len(reqs[1].Tools) != 0 {
		t.Fatalf("title request: %+v", reqs)
	}
	// A failed title is logged; the conversation keeps its first-line title.
	var d agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{}`, 201, &d)
	tp.A.Enqueue(llmtest.Reply{Text: "ok"})
	tp.A.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "no"})
	if got := ts.sendOK(t, d.ID, "hello there"); !strings.HasSuffix(got, "end") || strings.Contains(got, "error") {
		t.Errorf("turn with a failing title: %s", got)
	}
}

func waitTitle(t *testing.T, ts *testServer, id, want string) {
	t.Helper()
	var got agent.Conversation
	waitFor(t, "the title "+want, func() bool {
		ts.call(t, "GET", "/agentik/conversations/"+id, "", 200, &got)
		return got.Title == want
	})
	if got.UserTitled {
		t.Errorf("a model title counts as the user's")
	}
}

// TestTitleNeverOverwritesRename: a user's rename while the model writes
// the title wins, and so does one during the first turn.
func TestTitleNeverOverwritesRename(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	lw := &logWatch{}
	ts := newTestServer(t, withProviders(tp, agent.TitlesModel), func(a *agent.Config, _ *server.Config) { a.Logger = slog.New(lw) })

	// The rename races the title: it lands while the title request is held.
	var c agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{}`, 201, &c)
	hold := make(chan struct{})
	tp.A.Enqueue(llmtest.Reply{Text: "answer"})
	tp.A.Enqueue(llmtest.Reply{Text: "Model Title", Hold: hold})
	ts.sendOK(t, c.ID, "question")
	waitFor(t, "the title call", func() bool { return len(tp.A.Requests()) >= 2 })
	ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/rename", `{"title":"mine"}`, 200, nil)
	close(hold)
	lw.wait(t, "title_skipped")
	var got agent.Conversation
	ts.call(t, "GET", "/agentik/conversations/"+c.ID, "", 200, &got)
	if got.Title != "mine" {
		t.Errorf("title %q after the race, want the user's", got.Title)
	}

	// A rename during the first turn: no title request at all.
	ts.call(t, "POST", "/agentik/conversations", `{}`, 201, &c)
	hold = make(chan struct{})
	tp.A.Enqueue(llmtest.Reply{Text: "slow answer", Hold: hold})
	done := make(chan string)
	go func() { done <- names(ts.send(t, c.ID, "another question")) }()
	waitFor(t, "the third model call", func() bool { return len(tp.A.Requests()) >= 3 })
	ts.call(t, "PATCH", "/agentik/conversations/"+c.ID, `{"title":"named early"}`, 200, nil)
	close(hold)
	<-done
	lw.wait(t, "title_skipped")
	ts.call(t, "GET", "/agentik/conversations/"+c.ID, "", 200, &got)
	if got.Title != "named early" || len(tp.A.Requests()) != 3 {
		t.Errorf("title %q, %d model requests", got.Title, len(tp.A.Requests()))
	}
}

// TestOpenAIFacadeModels: /v1/models lists the providers' model ids, and a
// /v1 request naming one runs on it.
func TestOpenAIFacadeModels(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	ts := newTestServer(t, withProviders(tp, ""))
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	ts.call(t, "GET", "/v1/models", "", 200, &list)
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "fake,a/alpha-2" { // the default by its name, then the others
		t.Errorf("/v1/models: %v", ids)
	}
	ts.call(t, "POST", "/v1/chat/completions", `{"model":"a/alpha-2","messages":[{"role":"user","content":"hi"}]}`, 200, nil)
	ts.call(t, "POST", "/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`, 200, nil)
	reqs := tp.A.Requests()
	if len(reqs) != 2 || reqs[0].Model != "alpha-2" || reqs[1].Model != "alpha-1" {
		t.Errorf("a received %+v", reqs)
	}
}

// TestTempConversationSettings: a temp conversation (kept in memory) takes
// settings and a user's title like a stored one; the model's title does
// not overwrite that title.
func TestTempConversationSettings(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	tp.Up.Store(true)
	tp.P.Check(t.Context())
	lw := &logWatch{}
	ts := newTestServer(t, withProviders(tp, agent.TitlesModel), func(a *agent.Config, _ *server.Config) { a.Logger = slog.New(lw) })
	var c agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"temp":true}`, 201, &c)
	ts.call(t, "PATCH", "/agentik/conversations/"+c.ID, `{"model":"b/beta","system_prompt":"Temp prompt.","params":{"max_tokens":9}}`, 200, &c)
	if !c.Temp || c.Model != "b/beta" || c.SystemPrompt != "Temp prompt." || *c.Params.MaxTokens != 9 {
		t.Fatalf("patched temp %+v", c)
	}
	tp.B.Enqueue(llmtest.Reply{Text: "temp answer"})
	ts.sendOK(t, c.ID, "temp question")
	ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/rename", `{"title":"temp mine"}`, 200, nil)
	ts.call(t, "GET", "/agentik/conversations/"+c.ID, "", 200, &c)
	_ = lw // temp conversations are not named by the model (no title call to skip)
	if c.Title != "temp mine" {
		t.Errorf("temp title %q", c.Title)
	}
	r := tp.B.Requests()[0]
	if r.Model != "beta" || r.Messages[0].Content != "Temp prompt." || r.MaxTokens != 9 {
		t.Errorf("b received %s", r.Body)
	}
}

// TestWindowFollowsModel: the context window a conversation reports is
// its model's, and changes with it.
func TestWindowFollowsModel(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	ts := newTestServer(t, withProviders(tp, agent.TitlesFirstLine))
	var c agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"title":"w","model":"a/alpha-2"}`, 201, &c)
	ts.sendOK(t, c.ID, "first")
	ts.call(t, "GET", "/agentik/conversations/"+c.ID, "", 200, &c)
	if c.Context == nil || c.Context.Window != 32000 {
		t.Fatalf("context on alpha-2: %+v", c.Context)
	}
	ts.call(t, "PATCH", "/agentik/conversations/"+c.ID, `{"model":"a/alpha-1"}`, 200, nil)
	ts.sendOK(t, c.ID, "second")
	ts.call(t, "GET", "/agentik/conversations/"+c.ID, "", 200, &c)
	if c.Context == nil || c.Context.Window != 8000 {
		t.Fatalf("context on alpha-1: %+v", c.Context)
	}
}
