package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// syncBuffer is a log sink the server writes to from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// withLog sends the server's log, at debug, to w.
func withLog(w io.Writer) rigOption {
	return func(_ *agent.Config, s *server.Config) {
		s.Logger = slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// withFailures lets burst failed sign-ins from one address, then one per
// every.
func withFailures(burst int, every time.Duration) rigOption {
	return func(_ *agent.Config, s *server.Config) { s.AuthFailureBurst, s.AuthFailureEvery = burst, every }
}

// TestBrowserPasswordAccount: Ann in Chromium. An admin's invite link
// signs her up; she signs out and in; a wrong password is refused; an
// admin's reset link lets her choose a new one and ends her other
// sessions (a reload of another browser leads to the sign-in page, her
// old password no longer works); too many failures from her address are
// refused before any password is checked. Neither password is in the
// database or the log in clear.
func TestBrowserPasswordAccount(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	const admin = "k-admin"
	const first, second = "first correct horse", "second battery staple"
	var logs syncBuffer
	ts := newTestServer(t, withKeys(admin), withLog(&logs), withFailures(2, time.Hour))

	var inv struct{ URL, Token string }
	if code := bearerDo(t, "POST", admin, ts.URL+"/agentik/invites", `{"email":"ann@example.com"}`, &inv); code != 201 || !strings.HasPrefix(inv.URL, ts.URL+"/signup?token=") {
		t.Fatalf("invite: %d %+v", code, inv)
	}

	tab := browserTab(t, ts)
	do(t, tab, chromedp.Navigate(inv.URL))
	waitJS(t, tab, "sign-up page", `document.querySelector('[data-testid="signup-form"]') !== null`)
	setAndSubmit(t, tab, map[string]string{"signup-name": "Ann", "signup-email": "ann@example.com", "signup-password": "too short"}, "signup-submit")
	waitAfterSubmit(t, tab, "the short password refused", `document.querySelector('[data-testid="signup-error"]')?.textContent.includes('at least 12')`)
	setAndSubmit(t, tab, map[string]string{"signup-password": first}, "signup-submit")
	waitAfterSubmit(t, tab, "the chat, signed up", `location.pathname === '/'`)
	waitConnected(t, tab)
	var me agent.User
	if err := json.Unmarshal([]byte(eval[string](t, tab, `fetch('/agentik/me').then(r => r.text())`)), &me); err != nil || me.Email != "ann@example.com" || me.Role != agent.RoleMember || me.Name != "Ann" {
		t.Fatalf("me = %+v (%v)", me, err)
	}
	// The invite is used up.
	if code := bearerDo(t, "POST", "", ts.URL+"/agentik/signup", fmt.Sprintf(`{"token":%q,"email":"ann@example.com","password":"another long password"}`, inv.Token), nil); code != http.StatusNotFound {
		t.Errorf("a second sign-up with the invite: %d, want 404", code)
	}

	// Out, and in again.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="sign-out"]').click()`))
	waitAfterSubmit(t, tab, "signed out", `location.pathname === '/login' && document.querySelector('[data-testid="login-password-form"]') !== null`)
	login(t, tab, "ann@example.com", "wrong password here")
	waitAfterSubmit(t, tab, "the refusal", `document.querySelector('[data-testid="login-password-error"]')?.textContent.includes('do not match')`)
	login(t, tab, "ann@example.com", first)
	waitAfterSubmit(t, tab, "the chat, signed in", `location.pathname === '/'`)
	waitConnected(t, tab)

	// Another browser of Ann's.
	other := browserTab(t, ts)
	do(t, other, chromedp.Navigate(ts.URL+"/login"))
	login(t, other, "ann@example.com", first)
	waitAfterSubmit(t, other, "the chat in the other browser", `location.pathname === '/'`)
	waitConnected(t, other)

	// The admin's reset link, opened in a third browser.
	var reset struct{ URL string }
	if code := bearerDo(t, "POST", admin, ts.URL+"/agentik/users/"+me.ID+"/reset", ``, &reset); code != 201 || !strings.HasPrefix(reset.URL, ts.URL+"/reset?token=") {
		t.Fatalf("reset link: %d %+v", code, reset)
	}
	third := browserTab(t, ts)
	do(t, third, chromedp.Navigate(reset.URL))
	waitJS(t, third, "reset page", `document.querySelector('[data-testid="reset-form"]') !== null`)
	setAndSubmit(t, third, map[string]string{"reset-password": second}, "reset-submit")
	waitAfterSubmit(t, third, "the chat after the reset", `location.pathname === '/'`)
	waitConnected(t, third)

	// Her other sessions ended: the open page loses its connection, a
	// reload leads to the sign-in page.
	waitJS(t, other, "the other browser's socket closed", `document.getElementById('connection')?.dataset.state !== 'online'`)
	do(t, other, chromedp.Navigate(ts.URL+"/"))
	waitJS(t, other, "the other browser signed out", `location.pathname === '/login'`)
	do(t, tab, chromedp.Navigate(ts.URL+"/"))
	waitJS(t, tab, "the first browser signed out", `location.pathname === '/login'`)

	// The old password is refused (the second failure); then the address
	// is throttled: even the right password is not checked.
	login(t, tab, "ann@example.com", first)
	waitAfterSubmit(t, tab, "the old password refused", `document.querySelector('[data-testid="login-password-error"]') !== null`)
	login(t, tab, "ann@example.com", second)
	waitAfterSubmit(t, tab, "throttled", `document.querySelector('[data-testid="error-page"]')?.textContent.includes('too many failed sign-ins')`)

	// Nowhere in clear.
	n := 0
	err := filepath.WalkDir(filepath.Dir(ts.DB), func(f string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		n++
		for _, pw := range []string{first, second} {
			if bytes.Contains(b, []byte(pw)) {
				t.Errorf("%s holds the password %q in clear", f, pw)
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("database files at %s: %d, %v", ts.DB, n, err)
	}
	log := logs.String()
	if !strings.Contains(log, "login_failed") {
		t.Errorf("the log has no login_failed: %s", log)
	}
	for _, pw := range []string{first, second, inv.Token} {
		if strings.Contains(log, pw) {
			t.Errorf("the log holds %q in clear", pw)
		}
	}
}

// setAndSubmit sets the inputs of testid → value and clicks the submit
// button of testid submit, in one script.
func setAndSubmit(t testing.TB, tab context.Context, vals map[string]string, submit string) {
	t.Helper()
	var js strings.Builder
	js.WriteString("(() => {")
	for id, v := range vals {
		fmt.Fprintf(&js, "document.querySelector('[data-testid=%q]').value = %q;", id, v)
	}
	fmt.Fprintf(&js, "document.querySelector('[data-testid=%q]').click(); })()", submit)
	do(t, tab, chromedp.Evaluate[chromedp.Void](js.String()))
}

// login submits the sign-in page's email and password form.
func login(t testing.TB, tab context.Context, email, pw string) {
	t.Helper()
	setAndSubmit(t, tab, map[string]string{"login-email": email, "login-password": pw}, "login-password-submit")
}
