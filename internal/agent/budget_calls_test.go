package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// costScript answers with a usage by kind of call: a summary (it sets
// max_tokens) 1000 tokens, a title 7, a turn's call 10.
func costScript(req llmtest.Request) llmtest.Reply {
	switch {
	case req.MaxTokens > 0:
		return llmtest.Reply{Text: "SUMMARY: the user asked things.", Usage: &agent.Usage{PromptTokens: 900, CompletionTokens: 100}}
	case strings.Contains(req.Messages[0].Content, "Write a title"):
		return llmtest.Reply{Text: "A title", Usage: &agent.Usage{PromptTokens: 5, CompletionTokens: 2}}
	}
	return llmtest.Reply{Text: "an answer", Usage: &agent.Usage{PromptTokens: 8, CompletionTokens: 2}}
}

func usedToday(t *testing.T, g *rig) int64 {
	t.Helper()
	today := time.Now().UTC().Format(agent.DateFormat)
	days, err := g.st.UsageDays(context.Background(), agent.LocalUser, today, today)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, d := range days {
		n += d.PromptTokens + d.CompletionTokens
	}
	return n
}

// TestCompactionAndTitlesCountInTheBudget: a compaction's summary call and
// a title call are charged to the owner's budget, and a summary call past
// the budget is refused before it is made.
func TestCompactionAndTitlesCountInTheBudget(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) {
		c.Titles = agent.TitlesModel
		c.Budgets = &agent.Budgets{Default: agent.Budget{Tokens: 1050, Period: "day"}}
	}, llmtest.WithScript(costScript))
	ctx := context.Background()
	c := g.create(false)
	// The title is written in the background after the first answer; a
	// call in flight reserves its estimate, so a turn overlapping it could
	// be refused (or refuse it): the test waits for it before going on.
	noError(t, g.turn(c, "first"))
	testwait.For(t, "the first turn and the title", func() bool { return usedToday(t, g) == 17 })
	for _, text := range []string{"second", "third"} {
		noError(t, g.turn(c, text))
	}
	if n := usedToday(t, g); n != 37 {
		t.Fatalf("%d tokens used after three turns and a title, want 37", n)
	}
	res, err := g.r.Compact(ctx, c.ID)
	if err != nil || !res.Compacted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	if n := usedToday(t, g); n != 1037 {
		t.Fatalf("%d tokens used after a compaction, want 1037 (the summary's 1000 counted)", n)
	}
	noError(t, g.turn(c, "fourth"))
	noError(t, g.turn(c, "fifth")) // 1057: past the budget, the next call is refused
	calls := len(g.fake.Requests())
	_, err = g.r.Compact(ctx, c.ID)
	if agent.ErrorCode(err) != agent.CodeQuotaExceeded {
		t.Fatalf("a compaction past the budget: %v, want quota_exceeded", err)
	}
	if n := len(g.fake.Requests()); n != calls {
		t.Errorf("%d model calls by a compaction past the budget, want none", n-calls)
	}
}
