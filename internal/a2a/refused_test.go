package a2a_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/app/apptest"
)

// TestRefusedFirstMessageLeavesNothing: a SendMessage without a
// contextId refused (no model configured, the budget used up) is a
// JSON-RPC error that says why, and no conversation, nor its created
// event, is left.
func TestRefusedFirstMessageLeavesNothing(t *testing.T) {
	t.Parallel()
	const body = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`
	for _, tc := range []struct {
		name  string
		model bool
		says  string
	}{
		{"no model", false, "no model"},
		{"over the budget", true, "budget"},
	} {
		ts, w, spend := apptest.Refused(t, tc.model)
		if tc.model {
			spend()
		}
		req, _ := http.NewRequest("POST", ts.URL+"/a2a/agentik", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct {
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if json.Unmarshal(b, &got) != nil || got.Error == nil || !strings.Contains(got.Error.Message, tc.says) {
			t.Errorf("%s: %d %s, want an error saying %q", tc.name, resp.StatusCode, b, tc.says)
		}
		apptest.LeftNothing(t, w, tc.name)
	}
}
