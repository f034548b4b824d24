package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// waitAfterSubmit waits until expr is true on the page a form submission
// leads to, once that page is parsed; the page may still be the old one, or
// between the two, when it starts, and an element the parser has opened
// may not hold its text yet.
func waitAfterSubmit(t testing.TB, ctx context.Context, what, expr string) {
	t.Helper()
	expr = "document.readyState !== 'loading' && (" + expr + ")"
	c, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		select {
		case <-c.Done():
			waitJS(t, ctx, what, expr) // fails with the page's text
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestBrowserSignIn signs in through the real form in Chromium. Pages send
// Referrer-Policy: no-referrer, so Chromium posts the form with Origin: null;
// the server must tell that same-origin post from a cross-site one.
func TestBrowserSignIn(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys("k-secret"))
	tab := newBrowser(t, ts).tab()
	do(t, tab, chromedp.Navigate(ts.URL+"/"))
	waitJS(t, tab, "sign-in page", `location.pathname === '/login' && document.querySelector('[data-testid="login"]') !== null`)

	submit := func(key string) {
		t.Helper()
		do(t, tab, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { document.querySelector('[data-testid="login-key"]').value = %q; document.querySelector('.login button[type="submit"]').click(); })()`, key)))
	}
	submit("wrong")
	waitAfterSubmit(t, tab, "refusal on the page", `document.querySelector('[data-testid="login-error"]') !== null`)
	if got := eval[string](t, tab, `document.cookie`); got != "" {
		t.Errorf("cookies after a wrong key: %q", got)
	}

	submit("k-secret")
	waitAfterSubmit(t, tab, "the chat", `location.pathname === '/'`)
	waitConnected(t, tab)
	if got := eval[string](t, tab, `location.pathname`); got != "/" {
		t.Fatalf("after signing in the page is %q, want /", got)
	}
	send(t, tab, "hello there")
	id := conversationID(t, tab)
	waitJS(t, tab, "answer", jsAnswers+`.length === 1`)
	if got := answerText(t, tab, 0); got != "You said: hello there" {
		t.Errorf("answer = %q", got)
	}

	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if got := eval[string](t, tab, `location.pathname`); got != "/c/"+id {
		t.Fatalf("after a reload the page is %q, want /c/%s (still signed in)", got, id)
	}
	waitJS(t, tab, "answer after reload", jsAnswers+`.length === 1`)
}

// TestBrowserCrossSiteSignInRefused posts the sign-in form from another
// site: the server refuses it with an HTML page and sets no cookie.
func TestBrowserCrossSiteSignInRefused(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys("k-secret"))
	// 127.0.0.1 and localhost are different sites to the browser.
	target := strings.Replace(ts.URL, "127.0.0.1", "localhost", 1)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Referrer-Policy", "no-referrer")
		fmt.Fprintf(w, `<!DOCTYPE html><form method="post" action="%s/login"><input name="key" value="k-secret"><input name="next" value="/"><button type="submit">go</button></form>`, target)
	}))
	t.Cleanup(evil.Close)

	tab := newBrowser(t, ts).tab()
	do(t, tab, chromedp.Navigate(evil.URL))
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('button').click()`))
	waitAfterSubmit(t, tab, "refusal page", `location.pathname === '/login' && document.querySelector('[data-testid="error-page"]') !== null`)
	if got := eval[string](t, tab, `document.querySelector('[data-testid="error-page"]').textContent`); !strings.Contains(got, "cross-site") {
		t.Errorf("refusal page says %q", got)
	}
	do(t, tab, chromedp.Navigate(target+"/"))
	waitJS(t, tab, "sign-in page", `location.pathname === '/login'`)
}
