package server_test

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// TestCORS: a front end on an allowed origin gets its preflight answered
// and may read the API's answers; other origins get neither.
func TestCORS(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys("k-secret"), func(_ *agent.Config, s *server.Config) {
		s.AllowedOrigins = []string{"app.example.com"}
	})
	pre := func(origin string) (int, string, string) {
		t.Helper()
		resp, _ := doRequest(t, "OPTIONS", ts.URL+"/agentik/conversations", "", "Origin", origin,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
		return resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Allow-Headers")
	}
	code, allow, headers := pre("https://app.example.com")
	if code != 204 || allow != "https://app.example.com" || !strings.Contains(headers, "Authorization") || !strings.Contains(headers, "Content-Type") {
		t.Errorf("allowed preflight: %d, allow-origin %q, allow-headers %q", code, allow, headers)
	}
	if code, allow, _ := pre("https://evil.example"); code != 403 || allow != "" {
		t.Errorf("foreign preflight: %d, allow-origin %q", code, allow)
	}
	resp, body := doRequest(t, "POST", ts.URL+"/agentik/conversations", `{}`, "Origin", "https://app.example.com", "Authorization", "Bearer k-secret", "Content-Type", "application/json")
	if resp.StatusCode != 201 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Errorf("allowed request: %d, allow-origin %q: %s", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), body)
	}
	// A browser marks the app's post cross-site when the app is on another
	// site (a useChat page on its own domain): the listed origin may.
	resp, body = doRequest(t, "POST", ts.URL+"/agentik/conversations", `{}`, "Origin", "https://app.example.com", "Sec-Fetch-Site", "cross-site", "Authorization", "Bearer k-secret", "Content-Type", "application/json")
	if resp.StatusCode != 201 {
		t.Errorf("allowed cross-site request: %d %s", resp.StatusCode, body)
	}
	resp, _ = doRequest(t, "POST", ts.URL+"/agentik/conversations", `{}`, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site", "Authorization", "Bearer k-secret", "Content-Type", "application/json")
	if resp.StatusCode != 403 {
		t.Errorf("foreign cross-site request: %d", resp.StatusCode)
	}
	resp, _ = doRequest(t, "GET", ts.URL+"/agentik/conversations", "", "Origin", "https://evil.example", "Authorization", "Bearer k-secret")
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a foreign origin may read the answer")
	}
}
