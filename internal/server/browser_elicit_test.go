//go:build unix

package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/tool"
)

// withEverything gives the server the tools of server-everything, the MCP
// reference server from npm, over stdio.
func withEverything(t *testing.T) rigOption {
	t.Helper()
	entry, err := filepath.Abs("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		if os.Getenv("AGENTIK_TEST_NO_NODE") != "" {
			t.Skip("AGENTIK_TEST_NO_NODE is set")
		}
		t.Fatalf("server-everything is missing: run `npm ci` (or set AGENTIK_TEST_NO_NODE=1): %v", err)
	}
	cfg := tool.Config{Servers: []tool.ServerConfig{{Name: "everything", Transport: tool.TransportStdio, Command: "node", Args: []string{entry, "stdio"}}}}
	m, err := tool.Start(context.Background(), cfg, tool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	m.WaitStarted(t.Context())
	return func(a *agent.Config, s *server.Config) {
		a.Tools, a.ContentTools = m, m
		s.Tools, s.ToolsFor, s.Credentials, s.SignIn = m, m, m, m
	}
}

// TestBrowserElicitationForm: server-everything's elicitation tool asks;
// its schema is a form in the tool card (text, checkbox, email, date,
// number, selects, multi-selects), which survives a reload; an answer the
// server refuses (a bad email) is shown at its field and the request
// still waits; the corrected answer reaches the tool, whose result the card
// shows.
func TestBrowserElicitationForm(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withEverything(t))
	br := newBrowser(t, ts)
	c, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "Elicit"})
	if err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "e1", Name: "everything__trigger-elicitation-request", Arguments: `{}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "Thanks, Ada."})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		msgs, err := ts.Convs.Messages(context.Background(), agent.MessageQuery{ConversationID: c.ID, Limit: 100})
		for _, m := range msgs {
			t.Logf("stored: seq %d %s %+v %s %.200s", m.Seq, m.Type, m.Content, m.Name, m.Result)
		}
		t.Logf("stored messages err %v; model requests %d, replies left %d", err, len(ts.Fake.Requests()), ts.Fake.Pending())
	})
	a := br.tab()
	openPage(t, ts, a, "/c/"+c.ID)
	send(t, a, "ask me something")
	const form = `document.querySelector('.tool-card[data-call-id="e1"] [data-testid="elicitation"]')`
	waitJS(t, a, "the elicitation form in the tool card", form+` !== null`)
	// A reload shows it again: the wait is the server's, not the tab's.
	openPage(t, ts, a, "/c/"+c.ID)
	waitJS(t, a, "the form after a reload", form+` !== null`)
	for _, f := range []string{"name", "check", "email", "birthdate", "integer", "untitledSingleSelectEnum", "titledMultipleSelectEnum"} {
		if !eval[bool](t, a, form+`.querySelector('[data-testid="elicit-field-`+f+`"]') !== null`) {
			t.Errorf("the form has no field %s", f)
		}
	}
	do(t, a, chromedp.Evaluate[chromedp.Void](`(() => {
		const f = `+form+`;
		const set = (n, v) => { const e = f.querySelector('[data-field="'+n+'"]'); e.value = v; e.dispatchEvent(new Event('input')); };
		set('name', 'Ada Lovelace');
		set('email', 'not an email');
		set('birthdate', '1815-12-10');
		f.querySelector('[data-field="check"]').checked = true;
	})()`))
	do(t, a, chromedp.Click(chromedp.CSS(`.tool-card[data-call-id="e1"] [data-testid="elicit-accept"]`)))
	waitJS(t, a, "the refusal at the email field", form+`.querySelector('[data-testid="elicit-field-email"] [data-testid="elicit-field-error"]')?.textContent.includes('content.email') && `+form+`.querySelector('[data-field="email"]').getAttribute('aria-invalid') === 'true'`)
	do(t, a, chromedp.Evaluate[chromedp.Void](form+`.querySelector('[data-field="email"]').scrollIntoView({block: 'center'})`))
	screenshot(t, a, "elicitation-form.png")
	if w := waitWaitingREST(t, ts, c.ID, 1); len(w.Waiting) != 1 {
		t.Fatalf("after the refusal the request does not wait: %+v", w)
	}
	do(t, a, chromedp.Evaluate[chromedp.Void](`(() => { const e = `+form+`.querySelector('[data-field="email"]'); e.value = 'ada@example.com'; })()`))
	do(t, a, chromedp.Click(chromedp.CSS(`.tool-card[data-call-id="e1"] [data-testid="elicit-accept"]`)))
	waitJS(t, a, "the form gone, the answer noted", form+` === null && document.querySelector('.tool-card[data-call-id="e1"] [data-testid="elicit-answer"]') !== null`)
	waitJS(t, a, "the tool's result with the answer", `document.querySelector('.tool-card[data-call-id="e1"] [data-testid="tool-result"]')?.textContent.includes('Email: ada@example.com')`)
	waitJS(t, a, "the model's answer", jsAnswers+`.length === 1`)
	screenshot(t, a, "elicitation-answered.png")
}

// TestBrowserInboxElicitation: a tool's request for input shows on the
// Inbox page of another tab as the same form (built from its schema);
// answered there, it leaves the inbox, and the tool gets the answer.
func TestBrowserInboxElicitation(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withEverything(t))
	br := newBrowser(t, ts)
	c, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "Elicit"})
	if err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "e1", Name: "everything__trigger-elicitation-request", Arguments: `{}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "Thanks, Ada."})
	inbox, chat := br.tab(), br.tab()
	openPage(t, ts, inbox, "/inbox")
	openPage(t, ts, chat, "/c/"+c.ID)
	send(t, chat, "ask me something")

	const item = `document.querySelector('[data-testid="inbox-item"][data-kind="elicitation"]')`
	form := item + `?.querySelector('[data-testid="elicitation"]')`
	waitJS(t, inbox, "the request's form in the inbox", form+`?.querySelector('[data-field="email"]') != null && `+item+`.innerText.includes('Elicit')`)
	waitJS(t, inbox, "the count", `document.querySelector('[data-testid="inbox-count"]').textContent === '1'`)
	do(t, inbox, chromedp.Evaluate[chromedp.Void](`(() => {
		const f = `+form+`;
		const set = (n, v) => { const e = f.querySelector('[data-field="'+n+'"]'); e.value = v; e.dispatchEvent(new Event('input')); };
		set('name', 'Ada Lovelace');
		set('email', 'ada@example.com');
		set('birthdate', '1815-12-10');
		f.querySelector('[data-field="check"]').checked = true;
		f.querySelector('[data-testid="elicit-accept"]').click();
	})()`))
	waitJS(t, inbox, "the item gone", item+` === null && document.querySelector('[data-testid="inbox-count"]').hidden`)
	waitJS(t, chat, "the tool's result with the answer", `document.querySelector('.tool-card[data-call-id="e1"] [data-testid="tool-result"]')?.textContent.includes('Email: ada@example.com')`)
}
