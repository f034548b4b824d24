package main

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/client"
)

// TestDialErrorFitsAMembersKey: a terminal client refused with 401 tells
// a member what to do with their own agk_ key (ask an admin for one, or
// check it is not revoked), not only to use one of the server's
// AGENTIK_API_KEYS, which a member never has.
func TestDialErrorFitsAMembersKey(t *testing.T) {
	t.Parallel()
	refused := &client.DialError{Status: http.StatusUnauthorized}
	for _, c := range []struct {
		haveKey bool
		want    []string
	}{
		{true, []string{"refused the key in AGENTIK_API_KEY", "revoked", "agentik user key"}},
		{false, []string{"needs an API key", "AGENTIK_API_KEY", "agentik user key"}},
	} {
		msg := dialError("agentik chat", "http://127.0.0.1:8080", c.haveKey, refused).Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("have key %v: %q lacks %q", c.haveKey, msg, w)
			}
		}
	}
	if msg := dialError("agentik chat", "http://x", true, errors.New("connection refused")).Error(); !strings.Contains(msg, "cannot reach") {
		t.Errorf("an unreachable server: %q", msg)
	}
}
