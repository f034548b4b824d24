package openai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/app/apptest"
)

// TestRefusedFirstRequestLeavesNothing: a chat completion without a
// conversation (stateless) and a Responses request that starts one
// (stored or not) refused (an unknown model, no model configured, the
// budget used up) are OpenAI errors, and no conversation, stored or temp,
// nor a created event, is left.
func TestRefusedFirstRequestLeavesNothing(t *testing.T) {
	t.Parallel()
	requests := map[string]string{
		"chat":              `/v1/chat/completions {"model":"%s","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"hello"}]}`,
		"chat, streamed":    `/v1/chat/completions {"model":"%s","stream":true,"messages":[{"role":"user","content":"hello"}]}`,
		"responses":         `/v1/responses {"model":"%s","input":"hello"}`,
		"responses, seeded": `/v1/responses {"model":"%s","input":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"hello"}]}`,
		"responses, temp":   `/v1/responses {"model":"%s","store":false,"input":"hello"}`,
	}
	for _, tc := range []struct {
		name   string
		model  string // "": none configured
		spend  bool
		status int
	}{
		{"unknown model", "nope", false, http.StatusNotFound},
		{"no model", "", false, http.StatusServiceUnavailable},
		{"over the budget", "fake", true, http.StatusTooManyRequests},
	} {
		ts, w, spend := apptest.Refused(t, tc.model != "")
		if tc.spend {
			spend()
		}
		for name, req := range requests {
			path, body, _ := strings.Cut(req, " ")
			model := tc.model
			if model == "" {
				model = "fake"
			}
			resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(fmt.Sprintf(body, model)))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct{ Error *struct{ Message string } }
			if resp.StatusCode != tc.status || json.Unmarshal(b, &e) != nil || e.Error == nil {
				t.Errorf("%s, %s: %d %s, want %d with an OpenAI error", tc.name, name, resp.StatusCode, b, tc.status)
			}
			apptest.LeftNothing(t, w, tc.name+", "+name)
		}
	}
}
