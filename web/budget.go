package web

import (
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// BudgetLowPercent: the composer shows what is left of the reader's
// token budget once less than this share of it is (the JS reads it from
// Rules to update the line after each turn).
const BudgetLowPercent = 20

// BudgetNote is the reader's token budget now, for the line near the
// composer; nil without a budget.
type BudgetNote struct {
	User     string `json:"user"` // whose (get_usage's user)
	Limit    string `json:"limit"`
	Tokens   int64  `json:"tokens"`
	Used     int64  `json:"used"`
	ResetsAt string `json:"resets_at"` // RFC 3339, UTC
}

// NewBudgetNote is user's budget state b as the page shows it; nil for none.
func NewBudgetNote(user string, b *agent.BudgetState) *BudgetNote {
	if b == nil || b.Tokens <= 0 {
		return nil
	}
	return &BudgetNote{User: user, Limit: b.Limit, Tokens: b.Tokens, Used: b.Used, ResetsAt: b.ResetsAt.UTC().Format(time.RFC3339)}
}

// Low reports whether less than BudgetLowPercent of the budget is left.
func (b *BudgetNote) Low() bool {
	return b != nil && (b.Tokens-b.Used)*100 < b.Tokens*BudgetLowPercent
}

// Left is the tokens left, comma-grouped ("0" when used up).
func (b *BudgetNote) Left() string {
	if b == nil {
		return ""
	}
	return formatTokens(max(b.Tokens-b.Used, 0))
}
