package server_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestBrowserModelLabelIsTheModelUsed: after the admin panel makes
// another model the default, the sidebar's model label and the answer
// name the model that answered (not the one configured at start), and on
// a phone the answer's model label is shown whole, not cut to "f…".
func TestBrowserModelLabelIsTheModelUsed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys(adminKey))
	second, url := llmtest.NewHTTPServer(t, llmtest.WithModels("second-model"))
	second.Enqueue(llmtest.Reply{Text: "Answered by the second provider."})
	bearer := []string{"Authorization", "Bearer " + adminKey}
	pwCall(t, ts, "POST", "/agentik/admin/providers", `{"name":"second","base_url":"`+url+`","models":["second-model"],"enabled":true}`, 200, "", nil, bearer...)
	pwCall(t, ts, "PUT", "/agentik/admin/default_model", `{"value":"second/second-model"}`, 200, "", nil, bearer...)

	tab := signInTab(t, ts, adminKey)
	do(t, tab, chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	openPage(t, ts, tab, "/")
	footer := `document.querySelector('[data-testid="model"] .model-name').textContent`
	if got := eval[string](t, tab, footer); got != "second/second-model" {
		t.Errorf("a new chat's model label says %q, want the default second/second-model", got)
	}
	send(t, tab, "Who answers?")
	waitJS(t, tab, "the answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	label := jsAnswers + `[0].querySelector('.msg-model')`
	waitJS(t, tab, "the answer's model", label+`?.textContent === 'second/second-model'`)
	if !eval[bool](t, tab, label+`.checkVisibility() && `+label+`.scrollWidth <= `+label+`.clientWidth`) {
		t.Errorf("on a phone the answer's model label is cut: %d px of %d", eval[int](t, tab, label+`.clientWidth`), eval[int](t, tab, label+`.scrollWidth`))
	}
	screenshot(t, tab, "phone-model-label.png")
	if got := eval[string](t, tab, footer); got != "second/second-model" {
		t.Errorf("after the answer the model label says %q", got)
	}
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if got := eval[string](t, tab, footer); got != "second/second-model" {
		t.Errorf("reloaded, the chat's model label says %q", got)
	}
}
