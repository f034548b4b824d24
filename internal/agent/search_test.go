package agent_test

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

func TestParseSearch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text   string
		limit  int
		terms  string
		prefix bool
		code   string
	}{
		{text: "Hello World", terms: "hello,world", prefix: true},
		{text: "hello wo", terms: "hello,wo"},
		{text: "hello world ", terms: "hello,world"},
		{text: `"title":secret OR (x*)`, terms: "title,secret,or,x"},
		{text: "café-crème", terms: "café,crème", prefix: true},
		{text: `"*()`, terms: ""},
		{text: "", code: agent.CodeBadRequest},
		{text: " \t\n", code: agent.CodeBadRequest},
		{text: strings.Repeat("a", agent.MaxSearchQueryBytes+1), code: agent.CodeBadRequest},
		{text: strings.Repeat("x", 10<<10), code: agent.CodeBadRequest},
		{text: strings.Repeat("a ", agent.MaxSearchTerms+1), code: agent.CodeBadRequest},
		{text: "\xff", code: agent.CodeBadRequest},
		{text: "x", limit: agent.MaxSearchLimit + 1, code: agent.CodeBadRequest},
		{text: "x", limit: -1, code: agent.CodeBadRequest},
	} {
		q, err := agent.ParseSearch(c.text, c.limit)
		if c.code != "" {
			if agent.ErrorCode(err) != c.code || err == nil {
				t.Errorf("ParseSearch(%.30q) error = %v, want %s", c.text, err, c.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSearch(%q): %v", c.text, err)
			continue
		}
		if got := strings.Join(q.Terms, ","); got != c.terms || q.Prefix != c.prefix || q.Limit != agent.DefaultSearchLimit {
			t.Errorf("ParseSearch(%q) = %q prefix %v limit %d, want %q prefix %v", c.text, got, q.Prefix, q.Limit, c.terms, c.prefix)
		}
	}
}
