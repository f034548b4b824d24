package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
)

// twoServers are two tool servers' tools: weather (one tool) and files
// (two).
type twoServers struct{ fakeTools }

func (twoServers) Specs(context.Context) []agent.ToolSpec {
	var out []agent.ToolSpec
	for _, n := range []string{"weather__forecast", "files__read", "files__list"} {
		out = append(out, agent.ToolSpec{Name: n, Description: n, Parameters: []byte(`{"type":"object"}`)})
	}
	return out
}

func (twoServers) Servers() []agent.ToolServer {
	return []agent.ToolServer{
		{Name: "weather", Transport: "stdio", State: agent.ToolServerReady, Tools: []string{"weather__forecast"}},
		{Name: "files", Transport: "http", State: agent.ToolServerReady, Tools: []string{"files__read", "files__list"}},
	}
}

// serverTools are the tool servers' tools a model request offered (not
// the built-in ones).
func serverTools(r llmtest.Request) []string {
	var out []string
	for _, tl := range r.Tools {
		if strings.Contains(tl.Name, "__") {
			out = append(out, tl.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestBrowserToolsPerChat: the tools ticked in the composer are the
// conversation's (kept in its settings, shown again after a reload), and
// each turn offers the model only those: a new chat's choice goes with
// its first send, a changed one applies to the next turn; a bad choice
// is bad_request and changes nothing.
func TestBrowserToolsPerChat(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(a *agent.Config, s *server.Config) {
		a.Tools, a.ContentTools, s.Tools, s.ToolsFor = twoServers{}, nil, twoServers{}, nil
	})
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	btn := `document.querySelector('[data-testid="chat-tools-btn"]')`
	waitJS(t, tab, "the Tools button", btn+` && !`+btn+`.hidden`)
	if label := eval[string](t, tab, btn+`.getAttribute('aria-label')`); label != "Tools for this chat" {
		t.Errorf("the Tools button's label is %q", label)
	}
	// A new chat without files.
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="chat-tools-btn"]`)))
	waitJS(t, tab, "the tools list", `!document.querySelector('[data-testid="chat-tools-menu"]').hidden && document.querySelectorAll('[data-testid="chat-tool"]').length === 3`)
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="chat-tool-server"][data-server="files"]`)))
	waitJS(t, tab, "the count", `document.querySelector('[data-testid="chat-tools-count"]').textContent === '1/3'`)
	ts.Fake.Enqueue(llmtest.Reply{Text: "Only the weather."})
	send(t, tab, "first")
	id := conversationID(t, tab)
	waitJS(t, tab, "the first answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	reqs := ts.Fake.Requests()
	if got := serverTools(reqs[len(reqs)-1]); !slices.Equal(got, []string{"weather__forecast"}) {
		t.Fatalf("the first turn offered %v, want weather__forecast only", got)
	}
	c, err := ts.Convs.Get(t.Context(), id)
	if err != nil || c.Tools == nil || !slices.Equal(*c.Tools, []string{"weather"}) {
		t.Fatalf("the conversation's tools: %v (%v)", c.Tools, err)
	}

	// One tool of files too, for the next turn.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="chat-tools-menu"]').hidden && document.querySelector('[data-testid="chat-tools-btn"]').click()`))
	waitJS(t, tab, "the tools list", `!document.querySelector('[data-testid="chat-tools-menu"]').hidden`)
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="chat-tool"][data-tool="files__read"]`)))
	waitJS(t, tab, "the count", `document.querySelector('[data-testid="chat-tools-count"]').textContent === '2/3'`)
	waitFor(t, "the choice stored", func() bool {
		c, err := ts.Convs.Get(t.Context(), id)
		return err == nil && c.Tools != nil && slices.Equal(*c.Tools, []string{"weather", "files__read"})
	})
	ts.Fake.Enqueue(llmtest.Reply{Text: "Weather and reading."})
	send(t, tab, "second")
	waitJS(t, tab, "the second answer", jsAnswers+`.length === 2 && !document.querySelector('#live').children.length`)
	reqs = ts.Fake.Requests()
	if got := serverTools(reqs[len(reqs)-1]); !slices.Equal(got, []string{"files__read", "weather__forecast"}) {
		t.Fatalf("the second turn offered %v, want files__read and weather__forecast", got)
	}

	// Reloaded, the ticks are the chat's.
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	waitJS(t, tab, "the count after a reload", `document.querySelector('[data-testid="chat-tools-count"]').textContent === '2/3'`)
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="chat-tools-btn"]`)))
	ticks := eval[string](t, tab, `[...document.querySelectorAll('[data-testid="chat-tool"], [data-testid="chat-tool-server"]')].map(b => (b.dataset.tool || b.dataset.server) + '=' + (b.indeterminate ? 'some' : b.checked)).join(' ')`)
	if ticks != "weather=true weather__forecast=true files=some files__read=true files__list=false" {
		t.Fatalf("ticks after a reload: %s", ticks)
	}

	// Everything ticked again: every tool, stored as no choice.
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="chat-tool-server"][data-server="files"]`)))
	waitJS(t, tab, "no count", `document.querySelector('[data-testid="chat-tools-count"]').textContent === ''`)
	waitFor(t, "every tool again", func() bool {
		c, err := ts.Convs.Get(t.Context(), id)
		return err == nil && c.Tools == nil
	})

	// A bad choice is refused and changes nothing.
	ts.call(t, "PATCH", "/agentik/conversations/"+id, `{"tools":["weather"]}`, 200, nil)
	ts.call(t, "PATCH", "/agentik/conversations/"+id, `{"tools":["files__*"]}`, 400, nil)
	ts.call(t, "PATCH", "/agentik/conversations/"+id, `{"tools":["*","weather"]}`, 400, nil)
	var got agent.Conversation
	ts.call(t, "GET", "/agentik/conversations/"+id, "", 200, &got)
	if got.Tools == nil || !slices.Equal(*got.Tools, []string{"weather"}) {
		t.Fatalf("after refused changes: %v", got.Tools)
	}
}
