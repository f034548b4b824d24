package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// runAgentsSDK runs testdata/agents_sdk.mjs in phase with key against p
// and decodes what it printed.
func runAgentsSDK(t *testing.T, p *proc, phase, key string, out any, env ...string) {
	t.Helper()
	runNode(t, p, "agents_sdk.mjs", key, out, append([]string{"AGENTS_PHASE=" + phase}, env...)...)
}

type agentsSDKSeen struct {
	Tools map[string]string
	Card  json.RawMessage
	A2A   struct {
		Card struct {
			Name, Description, URL string
			Skills                 []struct {
				ID, Name string
				Examples []string
			}
		}
		Text, Context, Second string
	}
	MCP struct {
		Text, Conversation string
		IsError            bool
	}
	OtherTool struct {
		IsError bool
		Text    string
	} `json:"other_tool"`
	OtherCard string `json:"other_card"`
	Hidden    struct {
		IsError bool
		Text    string
	}
	Deleted int
}

// TestStoredAgentsOverA2AAndMCP: agents created over REST are served by
// both agent protocols to the callers who may use them, checked with
// @a2a-js/sdk and @modelcontextprotocol/sdk against the real binary. The
// admin's private agent has its own A2A card (skills from its description
// and starters) and MCP tool, and answers with its own instructions
// through both (the fake model's [[system]] says which prompt it got); a
// member sees their own private agent and not the admin's (404 card, no
// tool); an edit shows in the card and the tool, a deleted agent goes.
func TestStoredAgentsOverA2AAndMCP(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS="+a2aKey)
	member := memberKey(t, p)
	must(t, a2aKey, "POST", p.url("/agentik/agents"), `{"slug":"researcher","name":"Researcher","description":"Finds sources and sums them up","instructions":"You are the researcher.","starters":["Find papers on CRDTs","Sum up this link"]}`, nil)
	must(t, member, "POST", p.url("/agentik/agents"), `{"slug":"ann-notes","name":"Ann's notes","instructions":"You keep Ann's notes."}`, nil)

	var admin agentsSDKSeen
	runAgentsSDK(t, p, "admin", a2aKey, &admin)
	// The admin may use every agent: the default, theirs, and the member's.
	for _, name := range []string{"ask_agentik", "ask_researcher", "ask_ann_notes"} {
		if _, ok := admin.Tools[name]; !ok {
			t.Errorf("admin's tools %v lack %s", admin.Tools, name)
		}
	}
	if !strings.Contains(admin.Tools["ask_researcher"], "Finds sources") {
		t.Errorf("ask_researcher's description %q", admin.Tools["ask_researcher"])
	}
	c := admin.A2A.Card
	if c.Name != "Researcher" || c.Description != "Finds sources and sums them up" || c.URL != p.url("/a2a/researcher") || len(c.Skills) != 1 ||
		c.Skills[0].ID != "researcher" || !slices.Equal(c.Skills[0].Examples, []string{"Find papers on CRDTs", "Sum up this link"}) {
		t.Errorf("researcher's card %+v", c)
	}
	if admin.A2A.Text != "You are the researcher." || admin.A2A.Second != "You said: again" {
		t.Errorf("researcher over A2A answered %q, then %q", admin.A2A.Text, admin.A2A.Second)
	}
	if admin.MCP.Text != "You are the researcher." || admin.MCP.IsError {
		t.Errorf("researcher over MCP: %+v", admin.MCP)
	}
	for _, id := range []string{admin.A2A.Context, admin.MCP.Conversation} {
		var conv agent.Conversation
		must(t, a2aKey, "GET", p.url("/agentik/conversations/"+id), "", &conv)
		if conv.Agent != "researcher" {
			t.Errorf("conversation %s is agent %q's", id, conv.Agent)
		}
	}
	if !admin.OtherTool.IsError || !strings.Contains(admin.OtherTool.Text, "ask_researcher") || !strings.Contains(admin.OtherCard, "/a2a/researcher") {
		t.Errorf("researcher's conversation continued by another agent: MCP %+v, A2A %q", admin.OtherTool, admin.OtherCard)
	}

	var m agentsSDKSeen
	runAgentsSDK(t, p, "member", member, &m)
	if _, ok := m.Tools["ask_researcher"]; ok || len(m.Tools) != 2 {
		t.Errorf("member's tools %v: want ask_agentik and ask_ann_notes", m.Tools)
	}
	if string(m.Card) != "404" || !m.Hidden.IsError {
		t.Errorf("member reached the admin's private agent: card %s, tool %+v", m.Card, m.Hidden)
	}
	if m.A2A.Text != "You keep Ann's notes." || m.MCP.Text != "You keep Ann's notes." || m.A2A.Card.Name != "Ann's notes" {
		t.Errorf("member's own agent: A2A %+v, MCP %+v", m.A2A, m.MCP)
	}

	// The agent as a model on /v1 (Responses and chat completions).
	var ai struct {
		Responses                         struct{ Text, Model, Conversation string }
		Streamed, Seeded, Chat, Retrieved string
		Listed                            []string
		Unknown, Hidden                   string
	}
	runAgentsSDK(t, p, "openai", a2aKey, &ai, "AGENTIK_MEMBER_KEY="+member)
	want := "You are the researcher."
	if ai.Responses.Text != want || ai.Responses.Model != "agent/researcher" || ai.Streamed != want || ai.Seeded != want || ai.Chat != want {
		t.Errorf("agent/researcher on /v1: %+v", ai)
	}
	var conv agent.Conversation
	must(t, a2aKey, "GET", p.url("/agentik/conversations/"+ai.Responses.Conversation), "", &conv)
	if conv.Agent != "researcher" {
		t.Errorf("the response's conversation is agent %q's", conv.Agent)
	}
	if ai.Retrieved != "agent/researcher" || !contains(ai.Listed, "agent/researcher") || !strings.Contains(ai.Unknown, "404") || !strings.Contains(ai.Hidden, "404") {
		t.Errorf("models: retrieved %q, listed %v, unknown agent %q, the admin's private agent for a member %q", ai.Retrieved, ai.Listed, ai.Unknown, ai.Hidden)
	}

	must(t, a2aKey, "PATCH", p.url("/agentik/agents/researcher"), `{"description":"Reads the literature"}`, nil)
	if code, b := call(t, member, "DELETE", p.url("/agentik/agents/ann-notes"), ""); code != 204 {
		t.Fatalf("delete: %d %s", code, b)
	}
	var e agentsSDKSeen
	runAgentsSDK(t, p, "edited", a2aKey, &e)
	if !strings.Contains(e.Tools["ask_researcher"], "Reads the literature") || string(e.Card) != `"Reads the literature"` {
		t.Errorf("after the edit: tool %q, card %s", e.Tools["ask_researcher"], e.Card)
	}
	if _, ok := e.Tools["ask_ann_notes"]; ok || e.Deleted != 404 {
		t.Errorf("the deleted agent is still served: tools %v, card %d", e.Tools, e.Deleted)
	}
}
