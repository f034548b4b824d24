package mcpserve_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/app/apptest"
)

// TestRefusedFirstAskLeavesNothing: an ask_ call without a
// conversation_id refused (no model configured, the budget used up) is a
// tool error that says why, and no conversation, nor its created event,
// is left.
func TestRefusedFirstAskLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		model bool
		says  string
	}{
		{"no model", false, "no model"},
		{"over the budget", true, "quota_exceeded"},
	} {
		ts, w, spend := apptest.Refused(t, tc.model)
		if tc.model {
			spend()
		}
		post := func(session, body string) (string, string) {
			t.Helper()
			req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.Header.Get("Mcp-Session-Id"), string(b)
		}
		session, b := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if session == "" {
			t.Fatalf("initialize: %s", b)
		}
		_, b = post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_agentik","arguments":{"message":"hello"}}}`)
		if !strings.Contains(b, `"isError":true`) || !strings.Contains(b, tc.says) {
			t.Errorf("%s: %s, want a tool error saying %q", tc.name, b, tc.says)
		}
		apptest.LeftNothing(t, w, tc.name)
	}
}
