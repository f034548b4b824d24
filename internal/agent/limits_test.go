package agent_test

import (
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

func TestCheckContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content []agent.Content
		code    string
	}{
		{"ok", []agent.Content{agent.Text("hi")}, ""},
		{"image", []agent.Content{{Type: "image", Mime: "image/png", Data: "iVBORw0KGgo="}}, ""},
		{"empty", nil, agent.CodeBadRequest},
		{"blank", []agent.Content{agent.Text("  ")}, agent.CodeBadRequest},
		{"unknown type", []agent.Content{{Type: "audio"}}, agent.CodeBadRequest},
		{"bad mime", []agent.Content{{Type: "image", Mime: "text/html", Data: "AA=="}}, agent.CodeBadRequest},
		{"bad base64", []agent.Content{{Type: "image", Mime: "image/png", Data: "!!"}}, agent.CodeBadRequest},
		{"too many parts", make([]agent.Content, agent.MaxContentParts+1), agent.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := agent.CheckContent(tt.content)
			if got := code(err); got != tt.code {
				t.Fatalf("got code %q (%v), want %q", got, err, tt.code)
			}
		})
	}
}
