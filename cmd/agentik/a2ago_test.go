package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestA2AGoReadsCard: a2a-go 0.3's card resolver (which refuses a card
// whose security scheme has no 0.3 "type") reads agentik's cards once
// keys are set: the public default card and an agent's card behind the
// key, each with the bearer HTTP scheme and its URL.
func TestA2AGoReadsCard(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS="+a2aKey)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, resolve := range map[string]func() (*a2a.AgentCard, error){
		"the default card": func() (*a2a.AgentCard, error) { return agentcard.DefaultResolver.Resolve(ctx, p.url("/")) },
		"the agent's card": func() (*a2a.AgentCard, error) {
			return agentcard.DefaultResolver.Resolve(ctx, p.url("/a2a/agentik"), agentcard.WithRequestHeader("Authorization", "Bearer "+a2aKey))
		},
	} {
		card, err := resolve()
		if err != nil {
			t.Errorf("%s: a2a-go 0.3 cannot read it: %v", name, err)
			continue
		}
		scheme, ok := card.SecuritySchemes["bearer"].(a2a.HTTPAuthSecurityScheme)
		if !ok || scheme.Scheme != "bearer" || card.URL != p.url("/a2a/agentik") || len(card.Security) != 1 {
			t.Errorf("%s as a2a-go reads it: scheme %#v, url %q, security %v", name, card.SecuritySchemes["bearer"], card.URL, card.Security)
		}
	}
}
