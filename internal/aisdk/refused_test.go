package aisdk_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/aisdk"
	"github.com/agentik/agentik/internal/app/apptest"
)

// TestRefusedFirstMessageLeavesNothing: the first message of a chat id
// refused (no model configured, the budget used up) is the protocol's
// error, and no conversation of that id, nor its created event, is left.
func TestRefusedFirstMessageLeavesNothing(t *testing.T) {
	t.Parallel()
	const body = `{"id":"chat-new","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hello"}]}]}`
	for _, tc := range []struct {
		name  string
		model bool
		code  string
	}{
		{"no model", false, agent.CodeUnavailable},
		{"over the budget", true, agent.CodeQuotaExceeded},
	} {
		ts, w, spend := apptest.Refused(t, tc.model)
		if tc.model {
			spend()
		}
		req, _ := http.NewRequest("POST", ts.URL+aisdk.Prefix+"chat", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e agent.Error
		if resp.StatusCode < 400 || json.Unmarshal(b, &e) != nil || e.Code != tc.code {
			t.Errorf("%s: %d %s, want %s", tc.name, resp.StatusCode, b, tc.code)
		}
		apptest.LeftNothing(t, w, tc.name)
	}
}
