package main

import (
	"strings"
	"testing"
)

// TestChatTerminalPrompt: in a real terminal (tmux), `agentik chat`
// against the real binary with server-everything lists its prompts with
// /prompt, expands args-prompt after asking for the required city it was
// not given, and sends resource-prompt with its resource attached: the
// fake model reads both.
func TestChatTerminalPrompt(t *testing.T) {
	t.Parallel()
	p, fake := startEverything(t)
	tm := newTmux(t, chatCommand(p.addr))
	tm.waitScreen("the prompt", func(s string) bool { return strings.Contains(s, "conversation ") && strings.Contains(s, "> ") })
	typeLine := func(s string) {
		tm.run("send-keys", "-t", "chat", "-l", s)
		tm.run("send-keys", "-t", "chat", "Enter")
	}

	typeLine("/prompt")
	tm.waitScreen("the list of prompts", func(s string) bool {
		return strings.Contains(s, "/prompt args-prompt city=… [state=…]  (everything)") && strings.Contains(s, "/prompt simple-prompt")
	})
	typeLine("/prompt no-such-prompt")
	tm.waitScreen("the refusal", func(s string) bool { return strings.Contains(s, `error: no prompt "no-such-prompt"`) })

	typeLine("/prompt everything/args-prompt state=Rhône")
	tm.waitScreen("the question for city", func(s string) bool { return strings.Contains(s, "city (Name of the city): ") })
	typeLine("Lyon")
	tm.waitScreen("the answer", func(s string) bool {
		return strings.Contains(s, "[prompt everything/args-prompt] What's weather in Lyon, Rhône?") && strings.Contains(s, "tokens)")
	})
	if got := fake.Requests()[0].Messages[1]; got.Role != "user" || got.Content != "What's weather in Lyon, Rhône?" {
		t.Errorf("the model's user message = %+v", got)
	}

	n := len(fake.Requests())
	typeLine(`/prompt resource-prompt resourceType=Text resourceId="2"`)
	screen := tm.waitScreen("the second answer", func(s string) bool { return strings.Count(s, "tokens)") == 2 })
	if !strings.Contains(screen, "[attached demo://resource/dynamic/text/2]") {
		t.Errorf("the attachment is not shown:\n%s", screen)
	}
	var user string // of the turn's request (a title request may come between)
	for _, r := range fake.Requests()[n:] {
		for _, m := range r.Messages {
			if m.Role == "user" && strings.Contains(m.Content, "Please analyze") {
				user = m.Content
			}
		}
	}
	if !strings.Contains(user, "Please analyze the following resource") || !strings.Contains(user, "Resource 2: This is a plaintext resource") {
		t.Errorf("the model's user message = %q", user)
	}
}

func TestSplitWords(t *testing.T) {
	t.Parallel()
	got, err := splitWords(`args-prompt city="New York"  state=NY`)
	if err != nil || strings.Join(got, "|") != "args-prompt|city=New York|state=NY" {
		t.Errorf("splitWords = %q, %v", got, err)
	}
	if _, err := splitWords(`city="New York`); err == nil {
		t.Error("an open quote is not refused")
	}
}
