package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestBrowserApproveFromSecondTab: a tool call that waits shows Approve /
// Deny on its card in every tab (one opened mid-wait too); approving with
// edited arguments in the second tab runs the tool and both tabs show the
// decision and the answer.
func TestBrowserApproveFromSecondTab(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withApproval())
	br := newBrowser(t, ts)
	c, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "Approve"})
	if err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "b1", Name: "weather__forecast", Arguments: `{"city":"Oslo"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "It is sunny."})
	a := br.tab()
	openPage(t, ts, a, "/c/"+c.ID)
	send(t, a, "weather?")
	const box = `document.querySelector('.tool-card[data-call-id="b1"] [data-testid="approval"]')`
	waitJS(t, a, "approval controls in the first tab", box+` !== null`)
	b := br.tab()
	openPage(t, ts, b, "/c/"+c.ID)
	waitJS(t, b, "approval controls in a tab opened mid-wait", box+` !== null`)
	do(t, b, chromedp.Evaluate[chromedp.Void](`(() => { const e = document.querySelector('.tool-card[data-call-id="b1"] [data-testid="approval-arguments"]'); e.value = '{"city":"Bergen"}'; e.dispatchEvent(new Event('input')); })()`))
	do(t, b, chromedp.Click(chromedp.CSS(`.tool-card[data-call-id="b1"] [data-testid="approve"]`)))
	for _, tab := range []context.Context{a, b} {
		waitJS(t, tab, "controls gone", box+` === null`)
		waitJS(t, tab, "the answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
		if got := answerText(t, tab, 0); got != "It is sunny." {
			t.Errorf("answer %q", got)
		}
	}
	if !eval[bool](t, a, `document.querySelector('.tool-card[data-call-id="b1"]').textContent.includes('Bergen')`) {
		t.Error("the tool card does not show the result of the edited arguments")
	}
}

// TestBrowserSidebarMarksWaiting: a tab showing another conversation marks
// the one whose tool call waits ("Needs approval", live from the agent
// stream), the page renders the mark on load, and it disappears in that
// tab once a second tab approves.
func TestBrowserSidebarMarksWaiting(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withApproval())
	br := newBrowser(t, ts)
	ctx := context.Background()
	other, err := ts.Runner.Create(ctx, agent.NewConversation{Title: "Other"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ts.Runner.Create(ctx, agent.NewConversation{Title: "Waits"})
	if err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "s1", Name: "weather__forecast", Arguments: `{"city":"Oslo"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "It is sunny."})
	a := br.tab()
	openPage(t, ts, a, "/c/"+other.ID)
	item := fmt.Sprintf(`document.querySelector('[data-testid="conversation-item"][data-id="%s"]')`, c.ID)
	badge := item + `.querySelector('[data-testid="waiting-badge"]')`
	shown := badge + `.checkVisibility()`
	waitJS(t, a, "the conversation listed, unmarked", item+` !== null && `+item+`.dataset.waiting === 'false' && !`+shown)

	b := br.tab()
	openPage(t, ts, b, "/c/"+c.ID)
	send(t, b, "weather?")
	waitJS(t, a, "the mark in the other tab", item+`.dataset.waiting === 'true' && `+shown)
	screenshot(t, a, "sidebar-needs-approval.png")
	if got := eval[string](t, a, item+`.querySelector('a').innerText`); !strings.Contains(got, "Needs approval") {
		t.Errorf("the link reads %q, want it to say Needs approval", got)
	}
	if got := eval[string](t, a, `document.querySelector('[data-testid="conversation-item"][data-id="`+other.ID+`"]').dataset.waiting`); got != "false" {
		t.Errorf("the open conversation is marked %q", got)
	}

	// Server-rendered: the page's HTML carries the mark, and a reload shows it.
	res, err := http.Get(ts.URL + "/c/" + other.ID)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(res.Body)
	res.Body.Close()
	row := regexp.MustCompile(`<li [^>]*data-id="` + c.ID + `"[^>]*>`).Find(html)
	if !strings.Contains(string(row), `data-waiting="true"`) {
		t.Errorf("the rendered row %s is not marked waiting", row)
	}
	openPage(t, ts, a, "/c/"+other.ID)
	waitJS(t, a, "the mark after a reload", item+` !== null && `+item+`.dataset.waiting === 'true' && `+shown)

	const approve = `.tool-card[data-call-id="s1"] [data-testid="approve"]`
	waitJS(t, b, "approval controls", `document.querySelector('`+approve+`') !== null`)
	do(t, b, chromedp.Click(chromedp.CSS(approve)))
	waitJS(t, a, "the mark gone after the approval in the other tab", item+`.dataset.waiting === 'false' && !`+shown)
	waitIdle(t, ts, c.ID)
	if got := eval[string](t, a, item+`.dataset.waiting`); got != "false" {
		t.Errorf("after the turn: waiting %q", got)
	}
}

// statelessCompletion sends a /v1 chat completion without
// X-Agentik-Conversation (a stateless request, run in a temp
// conversation) with the Go HTTP client, and delivers its answer's
// content, or what went wrong, once it ends.
func statelessCompletion(t *testing.T, ts *testServer, question string) <-chan string {
	t.Helper()
	done := make(chan string, 1)
	body := `{"model":"fake","messages":[{"role":"user","content":` + jsString(question) + `}]}`
	go func() {
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		var c struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || json.Unmarshal(b, &c) != nil || len(c.Choices) != 1 {
			done <- fmt.Sprintf("status %d: %s", resp.StatusCode, b)
			return
		}
		done <- c.Choices[0].Message.Content
	}()
	return done
}

// TestBrowserApprovesAPIRequest: a stateless /v1 request whose tool call
// needs approval shows in its owner's sidebar as an "API request" that
// needs approval; opened (mid-wait: its events are not replayed), it shows
// the approval controls and, in the composer's place, what it is;
// approving there runs the tool and completes the /v1 response, and the
// open page stays to be read when the request's conversation goes.
func TestBrowserApprovesAPIRequest(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withApproval())
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	waitConnected(t, tab)
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "api1", Name: "weather__forecast", Arguments: `{"city":"Oslo"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "It is sunny in Oslo."})
	answer := statelessCompletion(t, ts, "weather in Oslo?")

	const row = `[...document.querySelectorAll('[data-testid="conversation-item"]')].find((li) => li.innerText.includes('weather in Oslo?'))`
	waitJS(t, tab, "the request in the sidebar, marked", `(() => { const li = `+row+`; return !!li && li.innerText.includes('API request') && li.innerText.includes('Needs approval') && !li.innerText.includes('Temp'); })()`)
	screenshot(t, tab, "sidebar-api-request.png")
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(`+row+`).querySelector('a').click()`))
	waitJS(t, tab, "the approval controls", `document.querySelector('[data-testid="approve"]')?.checkVisibility() === true`)
	waitJS(t, tab, "what the conversation is", `document.querySelector('[role="note"]')?.innerText.includes('An API client sent this request') && document.querySelector('#chat-title').closest('header').innerText.includes('API request')`)
	if eval[bool](t, tab, `document.querySelector('#prompt') !== null`) {
		t.Error("an API request's conversation offers a composer")
	}
	if got := eval[string](t, tab, `document.querySelector('[data-testid="approval-arguments"]').value`); !strings.Contains(got, "Oslo") {
		t.Errorf("the arguments to approve read %q", got)
	}
	screenshot(t, tab, "api-request-approval.png")
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="approve"]`)))
	select {
	case got := <-answer:
		if got != "It is sunny in Oslo." {
			t.Fatalf("the /v1 response: %s", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the /v1 response did not complete after the approval")
	}
	waitJS(t, tab, "the request gone from the sidebar", `!(`+row+`)`)
	waitJS(t, tab, "the answer stays on the page", `document.querySelector('#messages').innerText.includes('It is sunny in Oslo.') || document.querySelector('#live').innerText.includes('It is sunny in Oslo.')`)
	waitJS(t, tab, "a toast says it ended", `document.body.innerText.includes('The API request is answered')`)
}
