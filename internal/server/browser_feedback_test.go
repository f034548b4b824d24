package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
)

// TestBrowserFeedback: a member signed in to Chromium rates an answer 👍,
// changes it to 👎 and finds it after a reload; the admin's report counts
// it under the answer's model and agent and lists it, and the admin's
// people page in Chromium shows the count; the member's export
// carries it. Another member can neither rate that answer, nor read its
// ratings, nor the report; a bad rating is bad_request.
func TestBrowserFeedback(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	annID, ann := ts.member(t, admin, "ann")
	_, bob := ts.member(t, admin, "bob")

	tab := newBrowser(t, ts).tab()
	do(t, tab, chromedp.Navigate(ts.URL+"/"))
	waitJS(t, tab, "sign-in page", `location.pathname === '/login'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { document.querySelector('[data-testid="login-key"]').value = %q; document.querySelector('.login button[type="submit"]').click(); })()`, ann)))
	waitAfterSubmit(t, tab, "the chat", `location.pathname === '/'`)
	waitConnected(t, tab)
	send(t, tab, "hello there")
	waitJS(t, tab, "answer", jsAnswers+`.length === 1 && `+jsAnswers+`[0].dataset.id`)
	id := conversationID(t, tab)
	msg := eval[string](t, tab, jsAnswers+`[0].dataset.id`)
	pressed := func(which string) string {
		return `(` + jsAnswers + `[0].querySelector('[data-testid="rate-` + which + `"]').getAttribute('aria-pressed') === 'true')`
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](jsAnswers+`[0].querySelector('[data-testid="rate-up"]').click()`))
	waitJS(t, tab, "👍 pressed", pressed("up"))
	do(t, tab, chromedp.Evaluate[chromedp.Void](jsAnswers+`[0].querySelector('[data-testid="rate-down"]').click()`))
	waitJS(t, tab, "👎 pressed instead", pressed("down")+` && !`+pressed("up"))
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const f = `+jsAnswers+`[0].querySelector('[data-testid="feedback-comment"]'); f.querySelector('input').value = 'too long'; f.querySelector('[data-testid="feedback-comment-save"]').click(); })()`))
	waitJS(t, tab, "the comment sent", jsAnswers+`[0].querySelector('.feedback').dataset.commented === 'true'`)
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	waitJS(t, tab, "👎 pressed after a reload", jsAnswers+`.length === 1 && `+pressed("down"))

	var report agent.FeedbackReport
	if err := json.Unmarshal([]byte(ts.as(t, admin, "GET", "/agentik/feedback", "", 200)), &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Counts) != 1 || report.Counts[0].Up != 0 || report.Counts[0].Down != 1 || report.Counts[0].Agent != agent.DefaultAgent || report.Counts[0].Model == "" {
		t.Fatalf("counts %+v, want one 👎 of the default agent's model", report.Counts)
	}
	if len(report.Feedback) != 1 || report.Feedback[0].UserID != annID || report.Feedback[0].MessageID != msg || report.Feedback[0].Rating != agent.RatingDown || report.Feedback[0].Comment != "too long" || report.Feedback[0].Model != report.Counts[0].Model {
		t.Fatalf("list %+v", report.Feedback)
	}

	// The admin's people page counts it under the model and the agent.
	people := newBrowser(t, ts).tab()
	do(t, people, chromedp.Navigate(ts.URL+"/settings"))
	waitJS(t, people, "sign-in page", `location.pathname === '/login'`)
	do(t, people, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { document.querySelector('[data-testid="login-key"]').value = %q; document.querySelector('.login button[type="submit"]').click(); })()`, admin)))
	waitAfterSubmit(t, people, "the people page", `location.pathname === '/settings'`)
	row := `document.querySelector('[data-testid="feedback-count"][data-agent="agentik"][data-model="` + report.Counts[0].Model + `"]')`
	waitJS(t, people, "the counts", row+` && `+row+`.querySelector('[data-testid="down"]').textContent === '1' && `+row+`.querySelector('[data-testid="up"]').textContent === '0'`)

	var export agent.Archive
	if err := json.Unmarshal([]byte(ts.as(t, ann, "GET", "/agentik/conversations/"+id+"/export", "", 200)), &export); err != nil {
		t.Fatal(err)
	}
	if fb := export.Conversations[0].Feedback; len(fb) != 1 || fb[0].MessageID != msg || fb[0].Rating != agent.RatingDown {
		t.Fatalf("exported feedback %+v", fb)
	}

	rate := "/agentik/conversations/" + id + "/messages/" + msg + "/feedback"
	ts.as(t, bob, "PUT", rate, `{"rating":"up"}`, 404)
	ts.as(t, bob, "GET", "/agentik/conversations/"+id+"/feedback", "", 404)
	ts.as(t, bob, "GET", "/agentik/feedback", "", 403)
	ts.as(t, ann, "GET", "/agentik/feedback", "", 403)
	if body := ts.as(t, ann, "PUT", rate, `{"rating":"meh"}`, 400); !strings.Contains(body, `rating must be`) {
		t.Errorf("a bad rating: %s", body)
	}
	var mine struct{ Feedback []agent.Feedback }
	if err := json.Unmarshal([]byte(ts.as(t, ann, "GET", "/agentik/conversations/"+id+"/feedback", "", 200)), &mine); err != nil || len(mine.Feedback) != 1 || mine.Feedback[0].Rating != agent.RatingDown {
		t.Fatalf("ann's feedback after the refusals %+v, %v", mine.Feedback, err)
	}
}
