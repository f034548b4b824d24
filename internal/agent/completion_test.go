package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// completionTurn subscribes to id, starts a completion turn and returns its
// events up to end.
func (g *rig) completionTurn(id string, in agent.StartInput) []agent.Event {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: id}, -1, "")
	if err != nil {
		g.t.Fatal(err)
	}
	defer sub.Close()
	in.ConversationID = id
	if _, err := g.r.Start(ctx, in); err != nil {
		g.t.Fatal(err)
	}
	return untilEnd(g.t, ctx, sub)
}

// TestCompletionSeededHistory: a stateless completion's history is the
// model's context (its system message replacing the default prompt) and
// the temp conversation's history; nothing reaches the database.
func TestCompletionSeededHistory(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	ctx := context.Background()
	c, err := g.r.Create(ctx, agent.NewConversation{Temp: true, History: []agent.ModelMessage{
		{Role: agent.RoleSystem, Content: []agent.Content{agent.Text("be terse")}},
		{Role: agent.RoleUser, Content: []agent.Content{agent.Text("hi")}},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "k1", Name: "lookup", Arguments: "{}"}}},
		{Role: agent.RoleTool, ToolCallID: "k1", Content: []agent.Content{agent.Text("found")}},
		{Role: agent.RoleAssistant, Content: []agent.Content{agent.Text("it was found")}},
	}})

	if err != nil {
		t.Fatal(err)
	}
	if !c.Temp || !g.r.IsTemp(c.ID) {
		t.Fatalf("conversation %+v is not temp", c)
	}
	evs := g.completionTurn(c.ID, agent.StartInput{Content: []agent.Content{agent.Text("again")}})
	if got := text(evs); got != "You said: again" {
		t.Fatalf("answer %q", got)
	}
	msgs := g.fake.Requests()[0].Messages
	var roles string
	for _, m := range msgs {
		roles += m.Role + " "
	}
	if roles != "system user assistant tool assistant user " || msgs[0].Content != "be terse" || msgs[3].Content != "found" {
		t.Fatalf("model saw %q: %+v", roles, msgs)
	}
	hist := g.history(c)
	var types string
	for _, m := range hist {
		types += m.Type + " "
	}
	if types != "user_message tool_call tool_result assistant_message user_message assistant_message " || hist[2].Name != "lookup" {
		t.Fatalf("history %q", types)
	}
	if _, total, _ := g.st.Conversations(ctx, 0, 10); total != 0 {
		t.Fatalf("%d stored conversations, want none", total)
	}
}

// TestCompletionClientTools: a client tool is offered beside the server's;
// a round that calls it runs the server-side call, then ends the turn with
// the client's call kept; its result starts the next turn.
func TestCompletionClientTools(t *testing.T) {
	t.Parallel()
	tools := &fakeTools{}
	g := newRig(t, tools)
	c := g.create(false)
	client := []agent.ToolSpec{{Name: "get_time", Parameters: []byte(`{"type":"object"}`)}}
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "s1", Name: "calc__add", Arguments: `{}`}, {ID: "c1", Name: "get_time", Arguments: `{}`}}})
	evs := g.completionTurn(c.ID, agent.StartInput{Content: []agent.Content{agent.Text("what time")}, ClientTools: client})
	if got := types(evs); got != "message:user_message tool_call tool_call message:tool_call message:tool_call tool_result message:tool_result end" {
		t.Fatalf("events %s", got)
	}
	if len(tools.calls) != 1 || tools.calls[0] != "calc__add {}" {
		t.Fatalf("server tools ran %v, want calc__add only", tools.calls)
	}
	var names []string
	for _, s := range g.fake.Requests()[0].Tools {
		if !agent.IsMemoryTool(s.Name) { // offered too (memory.go)
			names = append(names, s.Name)
		}
	}
	if len(names) != 3 || names[2] != "get_time" {
		t.Fatalf("offered %v", names)
	}

	g.fake.Enqueue(llmtest.Reply{Text: "it is noon"})
	evs = g.completionTurn(c.ID, agent.StartInput{Results: []agent.ToolResult{{CallID: "c1", Name: "get_time", Result: "noon"}}, ClientTools: client})
	if got := text(evs); got != "it is noon" {
		t.Fatalf("answer %q", got)
	}
	last := g.fake.Requests()[1].Messages
	if m := last[len(last)-1]; m.Role != "tool" || m.ToolCallID != "c1" || m.Content != "noon" {
		t.Fatalf("the model saw %+v last", m)
	}
	hist := g.history(c)
	if m := hist[len(hist)-2]; m.Type != agent.MessageToolResult || m.CallID != "c1" || m.Result != "noon" {
		t.Fatalf("history %+v", hist)
	}
}

func TestCompletionBadInput(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	ctx := context.Background()
	c := g.create(false)
	for name, in := range map[string]agent.StartInput{
		"nothing new":   {},
		"no call id":    {Results: []agent.ToolResult{{Result: "x"}}},
		"bad tool name": {Content: []agent.Content{agent.Text("hi")}, ClientTools: []agent.ToolSpec{{Name: "a b"}}},
		"twice":         {Content: []agent.Content{agent.Text("hi")}, ClientTools: []agent.ToolSpec{{Name: "a"}, {Name: "a"}}},
		"bad schema":    {Content: []agent.Content{agent.Text("hi")}, ClientTools: []agent.ToolSpec{{Name: "a", Parameters: []byte(`[1]`)}}},
		"empty text":    {Content: []agent.Content{agent.Text(" ")}},
	} {
		in.ConversationID = c.ID
		if _, err := g.r.Start(ctx, in); !errors.Is(err, agent.ErrBadRequest) {
			t.Errorf("%s: %v, want bad_request", name, err)
		}
	}
	if _, err := g.r.Create(ctx, agent.NewConversation{Temp: true, History: []agent.ModelMessage{{Role: "wizard"}}}); !errors.Is(err, agent.ErrBadRequest) {
		t.Errorf("bad role: %v", err)
	}
	if _, err := g.r.Create(ctx, agent.NewConversation{Temp: true, History: []agent.ModelMessage{{Role: agent.RoleTool}}}); !errors.Is(err, agent.ErrBadRequest) {
		t.Errorf("tool without call id: %v", err)
	}
	if n := len(g.history(c)); n != 0 || len(g.fake.Requests()) != 0 {
		t.Fatalf("bad input changed something: %d messages, %d model calls", n, len(g.fake.Requests()))
	}
}

// TestCompletionFormatAndChoice: a completion's response format reaches
// every model call of its turn; a forced tool choice reaches the first and
// is auto after the round it forced (no endless tool loop); an unknown
// named tool is refused before anything is stored.
func TestCompletionFormatAndChoice(t *testing.T) {
	t.Parallel()
	g := newRig(t, &fakeTools{})
	c := g.create(false)
	format := &agent.ResponseFormat{Type: agent.FormatJSONSchema, Name: "sum", Schema: []byte(`{"type":"object"}`), Strict: true}
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "s1", Name: "calc__add", Arguments: `{}`}}})
	g.fake.Enqueue(llmtest.Reply{Text: `{"sum":3}`})
	g.completionTurn(c.ID, agent.StartInput{Content: []agent.Content{agent.Text("add")}, ResponseFormat: format,
		ToolChoice: &agent.ToolChoice{Mode: agent.ToolChoiceFunction, Name: "calc__add"}})
	reqs := g.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	for i, r := range reqs {
		var b struct {
			ResponseFormat json.RawMessage `json:"response_format"`
			ToolChoice     json.RawMessage `json:"tool_choice"`
		}
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		if got, want := string(b.ResponseFormat), `{"type":"json_schema","json_schema":{"name":"sum","schema":{"type":"object"},"strict":true}}`; got != want {
			t.Errorf("call %d: response_format %s, want %s", i, got, want)
		}
		want := `{"type":"function","function":{"name":"calc__add"}}`
		if i == 1 {
			want = "" // auto after the forced round
		}
		if string(b.ToolChoice) != want {
			t.Errorf("call %d: tool_choice %s, want %q", i, b.ToolChoice, want)
		}
	}
	if _, err := g.r.Start(context.Background(), agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("x")},
		ToolChoice: &agent.ToolChoice{Mode: agent.ToolChoiceFunction, Name: "nowhere"}}); !errors.Is(err, agent.ErrBadRequest) {
		t.Errorf("an unknown named tool: %v, want bad_request", err)
	}
	if n := len(g.history(c)); n != 4 { // user, tool call, tool result, answer
		t.Errorf("history has %d messages, want 4", n)
	}
}

// TestCompletionStrayResults: a tool result that answers no waiting call
// (none was made, or it was answered already) is refused and stores
// nothing; so is a stateless history with such a tool message, and an
// import with one.
func TestCompletionStrayResults(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	ctx := context.Background()
	c := g.create(false)
	g.turn(c, "hello")
	before := len(g.history(c))
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Results: []agent.ToolResult{{CallID: "call_nobody", Result: "x"}}}); !errors.Is(err, agent.ErrBadRequest) {
		t.Errorf("a result of no call: %v, want bad_request", err)
	}
	if n := len(g.history(c)); n != before {
		t.Errorf("the refused result stored %d messages", n-before)
	}
	for name, h := range map[string][]agent.ModelMessage{
		"no call": {{Role: agent.RoleUser, Content: []agent.Content{agent.Text("hi")}}, {Role: agent.RoleTool, ToolCallID: "c1"}},
		"answered twice": {{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "f"}}},
			{Role: agent.RoleTool, ToolCallID: "c1"}, {Role: agent.RoleTool, ToolCallID: "c1"}},
	} {
		if _, err := g.r.Create(ctx, agent.NewConversation{Temp: true, History: h}); !errors.Is(err, agent.ErrBadRequest) {
			t.Errorf("history %s: %v, want bad_request", name, err)
		}
	}
	_, err := g.r.Import(ctx, []agent.ImportConversation{{Source: "agentik:x:1", Messages: []agent.Message{
		{Type: agent.MessageUser, Content: []agent.Content{agent.Text("hi")}},
		{Type: agent.MessageToolResult, CallID: "call_nobody", Result: "stray"},
	}}})
	if !errors.Is(err, agent.ErrBadRequest) {
		t.Errorf("an import with a stray tool result: %v, want bad_request", err)
	}
	if cs, _, _ := g.r.Conversations(ctx, 0, 10); len(cs) != 1 {
		t.Errorf("%d conversations after the refused import, want 1", len(cs))
	}
}

func TestToolChoiceAfterRound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want *agent.ToolChoice
	}{
		{nil, nil},
		{&agent.ToolChoice{Mode: agent.ToolChoiceNone}, &agent.ToolChoice{Mode: agent.ToolChoiceNone}},
		{&agent.ToolChoice{Mode: agent.ToolChoiceRequired}, nil},
		{&agent.ToolChoice{Mode: agent.ToolChoiceFunction, Name: "f"}, nil},
		{&agent.ToolChoice{Mode: agent.ToolChoiceRequired, Allowed: []string{"f"}}, &agent.ToolChoice{Mode: agent.ToolChoiceAuto, Allowed: []string{"f"}}},
	} {
		got := tc.in.AfterRound()
		if (got == nil) != (tc.want == nil) || (got != nil && (got.Mode != tc.want.Mode || len(got.Allowed) != len(tc.want.Allowed))) {
			t.Errorf("AfterRound(%+v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// TestCompletionNoModelTitle: a stateless request's temp conversation is
// not named by the model: with model titles on, the one request costs one
// model call, not a second one for a title nobody sees.
func TestCompletionNoModelTitle(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) { c.Titles = agent.TitlesModel })
	c, err := g.r.Create(context.Background(), agent.NewConversation{Temp: true, History: nil})
	if err != nil {
		t.Fatal(err)
	}
	g.completionTurn(c.ID, agent.StartInput{Content: []agent.Content{agent.Text("hi")}})
	g.close() // waits for every background call, titles included
	if n := len(g.fake.Requests()); n != 1 {
		t.Fatalf("%d model calls for one stateless request, want 1 (no title call)", n)
	}
}
