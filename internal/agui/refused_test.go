package agui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/agui"
	"github.com/agentik/agentik/internal/app/apptest"
)

// TestRefusedFirstRunLeavesNothing: the first run of a threadId refused
// (no model configured, the budget used up) is a RUN_ERROR with the
// code, and no conversation of that id, nor its created event, is left.
func TestRefusedFirstRunLeavesNothing(t *testing.T) {
	t.Parallel()
	const body = `{"threadId":"thread-new","runId":"r1","messages":[{"id":"u1","role":"user","content":"hello"}]}`
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
		req, _ := http.NewRequest("POST", ts.URL+agui.Path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct{ Type, Code string }
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				_ = json.Unmarshal([]byte(d), &got)
			}
		}
		if got.Type != "RUN_ERROR" || got.Code != tc.code {
			t.Errorf("%s: %d %s, want RUN_ERROR %s", tc.name, resp.StatusCode, b, tc.code)
		}
		apptest.LeftNothing(t, w, tc.name)
	}
}
