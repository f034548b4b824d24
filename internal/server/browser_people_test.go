package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
)

// bearerGet GETs url with key and decodes a 200's body into out; it
// returns the status.
func bearerGet(t testing.TB, key, url string, out any) int {
	t.Helper()
	return bearerDo(t, "GET", key, url, "", out)
}

// bearerDo sends a request with key (and a JSON body when body is set)
// and decodes a 2xx answer into out; it returns the status.
func bearerDo(t testing.TB, method, key, url, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// The people page in Chromium, as an admin: add a user, make them an
// admin, make them a key (shown once, and it works), revoke it (it stops),
// disable and delete them; a refused change shows the server's message.
func TestBrowserPeopleManagement(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	const admin = "k-admin"
	ts := newTestServer(t, withKeys(admin))
	tab := browserTab(t, ts)
	do(t, tab, chromedp.Navigate(ts.URL+"/settings"))
	waitJS(t, tab, "sign-in page", `location.pathname === '/login'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { document.querySelector('[data-testid="login-key"]').value = %q; document.querySelector('.login button[type="submit"]').click(); })()`, admin)))
	waitAfterSubmit(t, tab, "the people page", `location.pathname === '/settings' && document.body.dataset.conn === 'online'`)

	addUser := func(name, email string) {
		t.Helper()
		do(t, tab,
			chromedp.SetValue(chromedp.CSS(`[data-testid="user-name"]`), name),
			chromedp.SetValue(chromedp.CSS(`[data-testid="user-email"]`), email),
			chromedp.Click(chromedp.CSS(`[data-testid="user-create"]`)),
		)
	}
	addUser("Ann", "ann@example.com")
	waitJS(t, tab, "Ann's row", `document.querySelector('tr[data-name="Ann"]') !== null`)
	var users struct{ Users []agent.User }
	bearerGet(t, admin, ts.URL+"/agentik/users", &users)
	var ann agent.User
	for _, u := range users.Users {
		if u.Name == "Ann" {
			ann = u
		}
	}
	if ann.ID == "" || ann.Role != agent.RoleMember || ann.Email != "ann@example.com" {
		t.Fatalf("users %+v", users.Users)
	}
	row := `document.querySelector('tr[data-user="` + ann.ID + `"]')`
	errEl := `document.querySelector('[data-testid="people-error"]')`

	addUser("Another Ann", "ann@example.com")
	waitJS(t, tab, "the conflict", `!`+errEl+`.hidden && `+errEl+`.textContent.includes('a user with this email')`)

	// Each step in one script: the list it acts on is swapped after every
	// change, so a node found by one step may be gone by the next.
	act := func(js string) {
		t.Helper()
		do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const row = `+row+`; `+js+` })()`))
	}
	act(`const s = row.querySelector('[data-testid="role"]'); s.value = 'admin'; s.dispatchEvent(new Event('change', {bubbles: true}));`)
	waitJS(t, tab, "Ann an admin", row+`.querySelector('[data-testid="role"]').value === 'admin' && `+errEl+`.hidden`)
	bearerGet(t, admin, ts.URL+"/agentik/users/"+ann.ID, &ann)
	if ann.Role != agent.RoleAdmin {
		t.Fatalf("after the role change: %+v", ann)
	}

	act(`row.querySelector('[data-testid="key-name"]').value = 'laptop'; row.querySelector('[data-testid="key-create"]').click();`)
	waitJS(t, tab, "the new key", `!document.getElementById('key-once').hidden && `+row+`.querySelectorAll('[data-testid="key"]').length === 1`)
	key := eval[string](t, tab, `document.querySelector('[data-testid="new-key"]').textContent`)
	if !strings.HasPrefix(key, agent.KeyPrefix) {
		t.Fatalf("shown key %q", key)
	}
	if strings.Contains(eval[string](t, tab, `document.getElementById('people-list').innerHTML`), key) {
		t.Error("the key is in the list, not only in the one-time box")
	}
	var me agent.User
	if code := bearerGet(t, key, ts.URL+"/agentik/me", &me); code != 200 || me.ID != ann.ID {
		t.Fatalf("Ann's new key: %d %+v", code, me)
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.getElementById('key-once').offsetTop - 16)`))
	screenshot(t, tab, "people.png")
	do(t, tab, chromedp.Reload())
	waitJS(t, tab, "reloaded", `document.body.dataset.conn === 'online'`)
	if eval[bool](t, tab, `document.getElementById('key-once').hidden === false || document.documentElement.innerHTML.includes(`+jsString(key)+`)`) {
		t.Error("the key is shown again after a reload")
	}

	act(`row.querySelector('[data-testid="revoke-key"]').click();`)
	waitJS(t, tab, "the key revoked", row+`.querySelectorAll('[data-testid="key"]').length === 0`)
	if code := bearerGet(t, key, ts.URL+"/agentik/me", nil); code != 401 {
		t.Errorf("a revoked key: %d, want 401", code)
	}

	act(`row.querySelector('[data-testid="toggle-user"]').click();`)
	waitJS(t, tab, "Ann disabled", row+`.dataset.disabled === 'true' && `+row+`.querySelector('[data-testid="state"]').textContent.trim() === 'disabled'`)
	bearerGet(t, admin, ts.URL+"/agentik/users/"+ann.ID, &ann)
	if !ann.Disabled {
		t.Fatalf("after disable: %+v", ann)
	}
	act(`row.querySelector('[data-testid="delete-user"]').click();`)
	waitJS(t, tab, "Ann deleted", row+` === null`)
	if code := bearerGet(t, admin, ts.URL+"/agentik/users/"+ann.ID, nil); code != 404 {
		t.Errorf("a deleted user: %d, want 404", code)
	}
}
