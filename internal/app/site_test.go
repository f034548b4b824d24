package app_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestProviderKeySealed: a provider's API key entered in the admin panel
// is sealed with AGENTIK_SECRET_KEY in the database (neither its
// site_setting row nor the database's files hold it in clear), opens again
// after a restart (the provider gets it), and without a secret key the
// panel refuses to keep one, storing nothing.
func TestProviderKeySealed(t *testing.T) {
	const providerKey = "sk-provider-key-never-in-clear-0123456789"
	_, fakeURL := llmtest.NewHTTPServer(t, llmtest.WithModels("fake"))
	second, secondURL := llmtest.NewHTTPServer(t, llmtest.WithModels("m2"))
	env := map[string]string{"OPENAI_BASE_URL": fakeURL, "OPENAI_MODEL": "fake"}
	dir := t.TempDir()
	db := filepath.Join(dir, "a.db")
	start := func(secretKey string) (*app.Wired, *httptest.Server) {
		t.Helper()
		s := app.Settings{Addr: "127.0.0.1:0", DB: "sqlite:" + db, Titles: "first_line", SecretKey: secretKey}
		w, err := app.Wire(t.Context(), s, func(k string) string { return env[k] }, io.Discard, app.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		return w, httptest.NewServer(w.App.Server)
	}
	stop := func(w *app.Wired, hs *httptest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx, func(context.Context) error { hs.Close(); return nil }); err != nil {
			t.Error(err)
		}
	}
	call := func(hs *httptest.Server, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	provider := `{"name":"second","base_url":"` + secondURL + `","api_key":"` + providerKey + `","models":["m2"],"enabled":true}`

	// Without a secret key: refused, nothing stored.
	w, hs := start("")
	if code, body := call(hs, "POST", "/agentik/admin/providers", provider); code != http.StatusBadRequest || !strings.Contains(body, "AGENTIK_SECRET_KEY") {
		t.Fatalf("a key without AGENTIK_SECRET_KEY: %d %s", code, body)
	}
	if kv, err := w.App.Store.SiteSettings(t.Context()); err != nil || kv["providers"] != "" {
		t.Fatalf("the refused provider was stored: %q (%v)", kv["providers"], err)
	}
	stop(w, hs)

	// With one: stored sealed.
	w, hs = start("a-secret-key-of-thirty-two-chars!")
	if code, body := call(hs, "POST", "/agentik/admin/providers", provider); code >= 300 {
		t.Fatalf("add provider: %d %s", code, body)
	}
	kv, err := w.App.Store.SiteSettings(t.Context())
	if err != nil || !strings.Contains(kv["providers"], "api_key_sealed") {
		t.Fatalf("stored providers %q (%v)", kv["providers"], err)
	}
	if strings.Contains(kv["providers"], providerKey) || strings.Contains(kv["providers"], `"api_key"`) {
		t.Fatalf("the key is in clear in the row: %s", kv["providers"])
	}
	stop(w, hs)
	err = filepath.WalkDir(dir, func(f string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte(providerKey)) {
			t.Errorf("%s holds the key in clear", f)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// Restarted with the same secret key, the provider gets its key.
	w, hs = start("a-secret-key-of-thirty-two-chars!")
	defer stop(w, hs)
	second.Enqueue(llmtest.Reply{Text: "from the second"})
	if code, body := call(hs, "POST", "/agentik/conversations", `{"model":"second/m2"}`); code != http.StatusCreated {
		t.Fatalf("create on second/m2: %d %s", code, body)
	} else {
		id := body[strings.Index(body, `"id":"`)+6:]
		id = id[:strings.Index(id, `"`)]
		if code, body := call(hs, "POST", "/agentik/conversations/"+id+"/send", `{"content":[{"type":"text","body":"hi"}]}`); code != http.StatusOK || !strings.Contains(body, "from the second") {
			t.Fatalf("send: %d %s", code, body)
		}
	}
	reqs := second.Requests()
	if len(reqs) == 0 || reqs[len(reqs)-1].Header.Get("Authorization") != "Bearer "+providerKey {
		t.Fatalf("the provider's requests do not carry its key: %d requests", len(reqs))
	}
}
