package web

import (
	"context"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// An error message offers Retry unless its code is one where trying
// again cannot help (a used-up budget); the rule is handed to the JS too.
func TestErrorRetry(t *testing.T) {
	for code, want := range map[string]bool{agent.CodeQuotaExceeded: false, "upstream_error": true, "": true} {
		var b strings.Builder
		if err := Message(MessageView{Kind: KindError, Type: agent.MessageError, Error: "it failed", Code: code}).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), `data-testid="retry"`); got != want {
			t.Errorf("code %q: Retry %v, want %v", code, got, want)
		}
	}
	if r := UIRules(); len(r.NoRetry) != 1 || r.NoRetry[0] != agent.CodeQuotaExceeded {
		t.Errorf("rules' no_retry %v", r.NoRetry)
	}
}
