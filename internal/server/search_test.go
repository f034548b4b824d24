package server_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

func TestSearchREST(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{Text: "Marmalade needs Seville oranges."})
	ts.send(t, c.ID, "how do I make marmalade?")
	var temp agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"title":"marmalade temp","temp":true}`, 201, &temp)

	var res protocol.SearchResults
	ts.call(t, "GET", "/agentik/search?q="+url.QueryEscape("seville"), "", 200, &res)
	if len(res.Results) != 1 || res.Results[0].ConversationID != c.ID || res.Results[0].MessageID == "" ||
		!strings.Contains(res.Results[0].Snippet, "<mark>Seville</mark>") {
		t.Fatalf("seville: %+v", res)
	}
	// The user's text is found too; the temp conversation never is.
	ts.call(t, "GET", "/agentik/search?q=marmalade&limit=5", "", 200, &res)
	if len(res.Results) != 1 || res.Results[0].ConversationID != c.ID {
		t.Fatalf("marmalade: %+v", res)
	}
	for _, q := range []string{"", "%20%20", strings.Repeat("a", 10<<10), "x&limit=0", "x&limit=101", "x&limit=z"} {
		resp := ts.do(t, "GET", "/agentik/search?q="+q, "")
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("q=%.20s: status %d, want 400", q, resp.StatusCode)
		}
	}
	for _, q := range []string{`"`, `NEAR(`, `*`, `a:*`, `'`} {
		ts.call(t, "GET", "/agentik/search?q="+url.QueryEscape(q), "", 200, &res)
	}
	ts.call(t, "DELETE", "/agentik/conversations/"+c.ID, "", 204, nil)
	ts.call(t, "GET", "/agentik/search?q=seville", "", 200, &res)
	if len(res.Results) != 0 {
		t.Fatalf("deleted conversation found: %+v", res)
	}
}

func TestSearchWS(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	ts := newTestServer(t)
	w := dialWS(t, ts)
	c := w.create("Quarterly taxes", false)
	var res protocol.SearchResults
	w.ok("search", map[string]any{"q": "quarterly", "limit": 3}, &res)
	if len(res.Results) != 1 || res.Results[0].ConversationID != c.ID || res.Results[0].MessageID != "" {
		t.Fatalf("search: %+v", res)
	}
	w.ok("rename", map[string]any{"conversation_id": c.ID, "title": "Yearly taxes"}, nil)
	w.ok("search", map[string]any{"q": "quarterly"}, &res)
	if len(res.Results) != 0 {
		t.Fatalf("old title found: %+v", res)
	}
	w.fail("search", map[string]any{"q": " "}, agent.CodeBadRequest)
	w.fail("search", map[string]any{"q": strings.Repeat("x", 10<<10)}, agent.CodeBadRequest)
}
