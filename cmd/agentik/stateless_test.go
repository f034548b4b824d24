package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestStatelessRequestsOnTheAllStream: a stateless /v1 request's history
// (here 2,000 messages) is not pushed to the all stream, which carries of
// its temp conversation only the created and deleted events and the turn
// (its input and answer); and a request over agent.MaxRequestMessages is
// 413 naming messages, before anything starts.
func TestStatelessRequestsOnTheAllStream(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), t.TempDir()+"/agentik.db", "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_CONTEXT_WINDOW=1000000")
	body := func(n int) string {
		msgs := make([]string, 0, n+1)
		for i := range n {
			role := []string{"user", "assistant"}[i%2]
			msgs = append(msgs, fmt.Sprintf(`{"role":%q,"content":"m%d"}`, role, i))
		}
		msgs = append(msgs, `{"role":"user","content":"the new input"}`)
		return `{"model":"fake","messages":[` + strings.Join(msgs, ",") + `]}`
	}

	code, b := call(t, "", "POST", p.url("/v1/chat/completions"), body(agent.MaxRequestMessages+1))
	if code != 413 || !strings.Contains(string(b), `"param":"messages"`) {
		t.Fatalf("a request of %d messages: %d %.300s, want 413 naming messages", agent.MaxRequestMessages+2, code, b)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	all := sse(t, ctx, "", p.url("/agentik/events/all"), "")
	// A stored conversation's event first: once it is here, the stream is
	// live (the request below comes after it).
	var c agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &c)
	for ev := range all {
		if decodeAll(t, ev.data).conv() == c.ID {
			break
		}
	}
	const history = 2000
	if code, b := call(t, "", "POST", p.url("/v1/chat/completions"), body(history)); code != 200 {
		t.Fatalf("stateless request: %d %.300s", code, b)
	}
	var temp string
	messages := 0
	for ev := range all {
		e := decodeAll(t, ev.data)
		if temp == "" && e.Type == agent.KindAgent && e.Event.Type == agent.AgentCreated {
			temp = e.conv()
		}
		if e.conv() != temp {
			continue
		}
		if e.Event.Type == agent.EventMessage {
			messages++
		}
		if e.Event.Type == agent.AgentDeleted {
			if messages != 2 {
				t.Fatalf("the all stream carried %d message events of a stateless request with %d messages of history, want 2 (its input and its answer)", messages, history)
			}
			return
		}
	}
	t.Fatalf("the temp conversation %q never ended on the all stream (%d message events seen)", temp, messages)
}
