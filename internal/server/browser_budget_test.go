package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
)

// TestBrowserBudgetEdit: a member sends; the admin sets the member's
// budget on the people page (10/day, less than that send used); the
// member's next send is refused before anything starts, in words, with
// the reset written in the member's time zone (New York), not as a UTC
// instant.
func TestBrowserBudgetEdit(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	annID, ann := ts.member(t, admin, "ann")
	signIn := func(key, path string) context.Context {
		tab := newBrowser(t, ts).tab()
		do(t, tab, timezone("America/New_York"), chromedp.Navigate(ts.URL+path))
		waitJS(t, tab, "sign-in page", `location.pathname === '/login'`)
		do(t, tab, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { document.querySelector('[data-testid="login-key"]').value = %q; document.querySelector('.login button[type="submit"]').click(); })()`, key)))
		waitAfterSubmit(t, tab, "signed in", `location.pathname === '`+path+`'`)
		return tab
	}
	member := signIn(ann, "/")
	waitConnected(t, member)
	send(t, member, "hello there")
	waitJS(t, member, "the first answer", jsAnswers+`.length === 1`)

	people := signIn(admin, "/settings")
	waitJS(t, people, "people page online", `document.body.dataset.ready === 'true' && document.body.dataset.conn === 'online'`)
	row := `document.querySelector('[data-user="` + annID + `"]')`
	do(t, people, chromedp.Evaluate[chromedp.Void](`(() => { const r = `+row+`; r.querySelector('[data-testid="budget"]').value = '10/day'; r.querySelector('[data-testid="budget-save"]').click(); })()`))
	waitJS(t, people, "the budget set", row+`?.querySelector('[data-testid="budget"]').value === '10/day' && `+row+`.textContent.includes('10/day')`)
	var u agent.User
	if err := json.Unmarshal([]byte(ts.as(t, admin, "GET", "/agentik/users/"+annID, "", 200)), &u); err != nil || u.Budget != "10/day" {
		t.Fatalf("stored user %+v, %v", u, err)
	}

	send(t, member, "and again")
	const toast = `[...document.querySelectorAll('[data-testid="toast"]')].map((t) => t.textContent).join(' | ')`
	waitJS(t, member, "the refusal", toast+`.includes('budget')`)
	got := eval[string](t, member, toast)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	reset := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour).In(ny).Format("15:04 MST") // a day's budget resets at 00:00 UTC
	if !strings.Contains(got, "the token budget of 10/day is used up") || !strings.Contains(got, "resets at") || strings.Contains(got, ":00Z") || !strings.Contains(got, reset) {
		t.Errorf("the refusal reads %q: want the budget in words and its reset at %s, New York time", got, reset)
	}
	if n := eval[int](t, member, jsAnswers+`.length`); n != 1 {
		t.Errorf("%d answers after the refused send, want 1", n)
	}
	if n := eval[int](t, member, `document.querySelectorAll('[data-testid="retry"]').length`); n != 0 {
		t.Errorf("%d Retry buttons after a budget refusal", n)
	}
}

// TestBrowserBudgetNote: with a budget of 22 tokens a day the composer
// says nothing before the first send; that send uses 19 (the fake
// model's usage), and once its turn ends the line above the composer says
// 3 tokens are left, live, with the reset in the reader's time zone; a
// reload shows it too.
func TestBrowserBudgetNote(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	annID, ann := ts.member(t, admin, "ann")
	ts.as(t, admin, "PATCH", "/agentik/users/"+annID, `{"budget":"22/day"}`, 200)
	tab := newBrowser(t, ts).tab()
	do(t, tab, timezone("America/New_York"), chromedp.Navigate(ts.URL+"/"))
	waitJS(t, tab, "sign-in page", `location.pathname === '/login'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { document.querySelector('[data-testid="login-key"]').value = %q; document.querySelector('.login button[type="submit"]').click(); })()`, ann)))
	waitAfterSubmit(t, tab, "signed in", `location.pathname === '/'`)
	waitConnected(t, tab)
	const note = `document.querySelector('[data-testid="budget-note"]')`
	if !eval[bool](t, tab, note+`.hidden`) {
		t.Fatal("the budget line shows with all of the budget left")
	}
	send(t, tab, "hello there")
	waitJS(t, tab, "the line after the turn", jsAnswers+`.length === 1 && !`+note+`.hidden`)
	got := eval[string](t, tab, note+`.textContent`)
	ny, _ := time.LoadLocation("America/New_York")
	reset := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour).In(ny).Format("15:04 MST")
	if !strings.Contains(got, "3 tokens left of your 22/day budget") || !strings.Contains(got, reset) {
		t.Errorf("the budget line reads %q, want 3 tokens left and the reset at %s", got, reset)
	}
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	waitJS(t, tab, "the line after a reload", `!`+note+`.hidden && `+note+`.textContent.includes('3 tokens left') && `+note+`.textContent.includes('`+reset+`')`)
}
