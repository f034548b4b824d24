package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestArtifactFrame: GET /artifact is public (a shared conversation's
// reader may be signed out), holds no data, and confines what runs in it:
// an opaque origin without top navigation, no network, framed only by the
// app's own pages.
func TestArtifactFrame(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys("k-one"))
	res, err := http.Get(ts.URL + "/artifact")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d without a key, want 200: %s", res.StatusCode, body)
	}
	csp := res.Header.Get("Content-Security-Policy")
	if !strings.HasPrefix(csp, "sandbox allow-scripts;") {
		t.Errorf("CSP sandbox is not allow-scripts alone: %q", csp)
	}
	for _, d := range []string{"default-src 'none'", "connect-src 'none'", "form-action 'none'", "img-src data:", "frame-ancestors 'self'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("CSP lacks %q: %q", d, csp)
		}
	}
	if strings.Contains(csp, "allow-same-origin") || strings.Contains(csp, "allow-top-navigation") {
		t.Errorf("CSP lets the frame out: %q", csp)
	}
	if !strings.Contains(string(body), "e.source !== parent") {
		t.Errorf("the frame takes content from other windows than its parent: %s", body)
	}
}
