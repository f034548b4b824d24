package server_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
)

// TestRefusedSendChangesNothing: over REST and the WebSocket, a send
// refused (no model, the budget used up, busy) is that error and changes
// nothing: the conversation holds what it held, with no new event, and
// the list holds no other conversation.
func TestRefusedSendChangesNothing(t *testing.T) {
	t.Parallel()
	budget := func(a *agent.Config, _ *server.Config) {
		if a.Budgets != nil { // nil in the rig's probe
			a.Budgets.Default = agent.Budget{Tokens: 10, Period: "day"}
		}
	}
	for _, tc := range []struct {
		name   string
		opts   []rigOption
		code   string
		status int
	}{
		{"no model", []rigOption{withoutModel()}, agent.CodeUnavailable, 503},
		{"over the budget", []rigOption{budget}, agent.CodeQuotaExceeded, 429},
		{"busy", nil, agent.CodeBusy, 409},
	} {
		ts := newTestServer(t, tc.opts...)
		ctx := context.Background()
		c := ts.create(t)
		var hold chan struct{}
		switch tc.code {
		case agent.CodeQuotaExceeded:
			if err := ts.Store.AddUsage(ctx, agent.LocalUser, time.Now().UTC().Format(agent.DateFormat), 10, 0); err != nil {
				t.Fatal(err)
			}
		case agent.CodeBusy:
			hold = make(chan struct{})
			ts.Fake.Enqueue(llmtest.Reply{Text: "held", Hold: hold})
			if _, err := ts.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: text("first")}); err != nil {
				t.Fatal(err)
			}
		}
		events := func() int {
			t.Helper()
			evs, err := ts.Store.EncodedEvents(ctx, agent.EventQuery{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return len(evs)
		}
		before, messages := events(), len(ts.history(t, c.ID))

		resp := ts.do(t, "POST", "/agentik/conversations/"+c.ID+"/send", `{"content":[{"type":"text","body":"refused"}]}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: REST send: %d %s, want %d", tc.name, resp.StatusCode, b, tc.status)
		}
		ws := dialWS(t, ts)
		ws.fail("send", map[string]any{"conversation_id": c.ID, "content": text("refused")}, tc.code)
		ws.close()

		if n := events(); n != before {
			t.Errorf("%s: %d events were written", tc.name, n-before)
		}
		if n := len(ts.history(t, c.ID)); n != messages {
			t.Errorf("%s: %d messages, want %d", tc.name, n, messages)
		}
		if n := ts.total(t); n != 1 {
			t.Errorf("%s: %d conversations listed, want the one made", tc.name, n)
		}
		if hold != nil {
			close(hold)
			waitIdle(t, ts, c.ID)
		}
	}
}

// TestCreateWithFirstMessage: create_conversation with content makes the
// conversation and starts its turn in one append (the UI's first send):
// the reply is the Conversation with "send", whose seq a subscription
// replays the turn from; refused (no model, bad content, a temp chat),
// it is that error and no conversation is left, so no client deletes one.
func TestCreateWithFirstMessage(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ws := dialWS(t, ts)
	defer ws.close()
	var got struct {
		ID           string        `json:"id"`
		SystemPrompt string        `json:"system_prompt"`
		Params       *agent.Params `json:"params"`
		Send         struct {
			MessageID string `json:"message_id"`
			Seq       int64  `json:"seq"`
		} `json:"send"`
	}
	ws.ok("create_conversation", map[string]any{"title": "First", "system_prompt": "Be brief.", "params": map[string]any{"temperature": 0.5}, "content": text("hello there"), "client_id": "k1"}, &got)
	if got.ID == "" || got.Send.MessageID == "" || got.Send.Seq == 0 || got.SystemPrompt != "Be brief." || got.Params == nil || got.Params.Temperature == nil {
		t.Fatalf("create with a first message answered %+v", got)
	}
	sub := ws.subscribe(map[string]any{"stream": "conversation", "conversation_id": got.ID, "after": got.Send.Seq - 1})
	evs := ws.collect(sub.Sub, func(e agent.AllEvent) bool { return e.Event != nil && e.Event.Type == agent.EventEnd })
	first := decodeEvent(t, evs[0]).Event
	if first == nil || first.Type != agent.EventMessage || first.Message == nil || first.Message.ID != got.Send.MessageID || first.Message.ClientID != "k1" {
		t.Errorf("the replay starts with %s, want the first message %s with its client_id", evs[0], got.Send.MessageID)
	}
	h := ts.history(t, got.ID)
	if len(h) != 2 || agent.MessageText(h[1]) != "You said: hello there" {
		t.Errorf("history %+v, want the message and its answer", h)
	}

	for _, tc := range []struct {
		name   string
		fields map[string]any
		code   string
	}{
		{"an unknown model", map[string]any{"model": "nope/none", "content": text("hi")}, agent.CodeBadRequest},
		{"empty text", map[string]any{"content": []map[string]any{{"type": "text", "body": ""}}}, agent.CodeBadRequest},
		{"a temp chat", map[string]any{"temp": true, "content": text("hi")}, agent.CodeBadRequest},
		{"a client_id without content", map[string]any{"client_id": "k2"}, agent.CodeBadRequest},
	} {
		ws.fail("create_conversation", tc.fields, tc.code)
		if n := ts.total(t); n != 1 {
			t.Fatalf("%s: %d conversations listed, want the first one only", tc.name, n)
		}
	}
}
