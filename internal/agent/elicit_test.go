package agent_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// askTool is one tool that asks the user (ToolHooks.Elicit) and returns
// the answer; answered is closed when its first ask has been answered, and
// that first call returns once release is closed.
type askTool struct {
	calls    atomic.Int32
	once     sync.Once
	answered chan struct{}
	release  chan struct{}
}

func (a *askTool) Specs(context.Context) []agent.ToolSpec {
	return []agent.ToolSpec{{Name: "form__ask", Description: "asks a name", Parameters: []byte(`{"type":"object"}`)}}
}

func (a *askTool) Call(ctx context.Context, _, _ string) (string, error) {
	n := a.calls.Add(1)
	res, err := agent.ToolHooksFrom(ctx).Elicit(ctx, agent.ElicitRequest{Server: "form", Message: "Your name?",
		Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})
	a.once.Do(func() { close(a.answered) })
	if n == 1 {
		<-a.release
	}
	if err != nil {
		return "", err
	}
	return "name: " + string(res.Content), nil
}

// TestElicitAnswerCommittedBeforeItIsHanded: the answer's commit wakes the
// waiting call (Runner.Committed, for answers given on another instance)
// before Runner.Elicit has handed the answer over itself. The call then
// reads the stored answer and goes on; Elicit must not take the call for
// gone and run the stored round a second time (the tool ran twice, its
// result was stored twice and the model answered twice: the load-only
// failure of TestBrowserElicitationForm).
func TestElicitAnswerCommittedBeforeItIsHanded(t *testing.T) {
	t.Parallel()
	tools := &askTool{answered: make(chan struct{}), release: make(chan struct{})}
	var release sync.Once
	free := func(string) { release.Do(func() { close(tools.release) }) }
	g := newRig(t, tools)
	// A resume that waits for the turn lets the call end (the race's
	// other half: the round it read is answered meanwhile).
	agent.SetRaceHooks(g.r, nil, free)
	c := g.create(false)
	asked := make(chan string, 1)
	g.onCommit = func(evs []agent.AllEvent) {
		for _, e := range evs {
			switch {
			case e.Event == nil:
			case e.Event.Type == agent.EventElicitationRequest:
				asked <- e.Event.RequestID
			case e.Event.Type == agent.EventElicitation && e.Event.Action == agent.ElicitAccept:
				// The answer is committed and its Append has not returned:
				// let the woken call take it first.
				select {
				case <-tools.answered:
				case <-t.Context().Done():
				}
			}
		}
	}
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "a1", Name: "form__ask", Arguments: `{}`}}})
	g.fake.Enqueue(llmtest.Reply{Text: "Thanks, Ada."})
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("ask me")}}); err != nil {
		t.Fatal(err)
	}
	var id string
	select {
	case id = <-asked:
	case <-ctx.Done():
		t.Fatal("the tool's request was never stored")
	}
	if err := g.r.Elicit(ctx, c.ID, agent.ElicitInput{RequestID: id, Action: agent.ElicitAccept, Content: json.RawMessage(`{"name":"Ada"}`)}); err != nil {
		t.Fatal(err)
	}
	free("")
	if _, err := agent.Await(ctx, g.r, c.ID, func(c agent.Conversation) bool { return !c.Running }); err != nil {
		t.Fatal(err)
	}
	// Closing waits for every turn of the runner, a second one included.
	g.close()
	g.open()
	msgs, err := g.r.Messages(ctx, agent.MessageQuery{ConversationID: c.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var results, answers int
	for _, m := range msgs {
		switch m.Type {
		case agent.MessageToolResult:
			results++
		case agent.MessageAssistant:
			answers++
		}
	}
	if n := tools.calls.Load(); n != 1 || results != 1 || answers != 1 {
		t.Fatalf("the tool ran %d times, %d results and %d answers are stored; want 1 of each", n, results, answers)
	}
}
