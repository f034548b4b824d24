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
