package agent

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Budget is a token budget per period: at most Tokens prompt and
// completion tokens in each day, week or month (UTC). The zero Budget is
// no budget.
type Budget struct {
	Tokens int64
	Period string // "day", "week" (from Monday) or "month"
}

// ParseBudget reads "2M/month", "500k/day", "100000/week" (k, M, G
// multiply by a thousand, a million, a billion); "" and "none" are no
// budget.
func ParseBudget(s string) (Budget, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "none") {
		return Budget{}, nil
	}
	bad := Errorf(CodeBadRequest, "budget %q does not parse: write tokens/period, e.g. 2M/month, 500k/day or 100000/week (or none)", Shorten(s, 60))
	n, period, ok := strings.Cut(s, "/")
	if !ok {
		return Budget{}, bad
	}
	period = strings.ToLower(strings.TrimSpace(period))
	switch period {
	case "day", "week", "month":
	default:
		return Budget{}, bad
	}
	n = strings.TrimSpace(n)
	mult := int64(1)
	if n != "" {
		switch n[len(n)-1] {
		case 'k', 'K':
			mult = 1_000
		case 'm', 'M':
			mult = 1_000_000
		case 'g', 'G', 'b', 'B':
			mult = 1_000_000_000
		}
		if mult > 1 {
			n = n[:len(n)-1]
		}
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil || f <= 0 || f*float64(mult) > 1e15 {
		return Budget{}, bad
	}
	return Budget{Tokens: int64(f * float64(mult)), Period: period}, nil
}

// IsZero reports whether b is no budget.
func (b Budget) IsZero() bool { return b.Tokens <= 0 }

// String writes b as ParseBudget reads it.
func (b Budget) String() string {
	if b.IsZero() {
		return "none"
	}
	n := b.Tokens
	switch {
	case n%1_000_000_000 == 0:
		return strconv.FormatInt(n/1_000_000_000, 10) + "G/" + b.Period
	case n%1_000_000 == 0:
		return strconv.FormatInt(n/1_000_000, 10) + "M/" + b.Period
	case n%1_000 == 0:
		return strconv.FormatInt(n/1_000, 10) + "k/" + b.Period
	}
	return strconv.FormatInt(n, 10) + "/" + b.Period
}

// Window is the period of b that holds t: [start, end) in UTC.
func (b Budget) Window(t time.Time) (start, end time.Time) {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch b.Period {
	case "week":
		start = day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
		return start, start.AddDate(0, 0, 7)
	case "month":
		start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
	return day, day.AddDate(0, 0, 1)
}

// UsageDay is one user's tokens of one day (UTC).
type UsageDay struct {
	Date             string `json:"date"` // YYYY-MM-DD
	UserID           string `json:"user_id"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
}

// UsageStore keeps the tokens used per user and day, durably (the
// database implements it).
type UsageStore interface {
	// AddUsage adds tokens to user's day.
	AddUsage(ctx context.Context, user, date string, prompt, completion int64) error
	// UsageDays returns the days in [from, to] (dates, inclusive) of user
	// ("" every user), by date then user.
	UsageDays(ctx context.Context, user, from, to string) ([]UsageDay, error)
}

// DateFormat is how a usage day is written.
const DateFormat = "2006-01-02"

// Budgets enforces token budgets: the Runner checks one before a turn,
// and every model call made for a user (a turn's, a compaction's summary,
// a title) reserves its estimated cost before it is made and is charged
// its reported usage after. A call is refused with quota_exceeded when
// what the user used plus what their calls in flight reserved reaches the
// budget; so however many turns run at once, the calls in flight when
// the budget is crossed are the only ones past it, and the admitted
// calls' estimates keep them to about one call's worth in total.
// A nil *Budgets enforces nothing and records nothing.
type Budgets struct {
	Default Budget     // AGENTIK_DEFAULT_BUDGET; zero: none
	Site    *Site      // the admin panel's default budget overrides Default (site.go); may be nil
	Users   UserStore  // a user's own budget overrides the default; nil: the default for all
	Usage   UsageStore // where usage is kept; nil: nothing is kept
	Now     Clock
	Log     func(msg string, args ...any) // failures to record usage; may be nil

	mu       sync.Mutex
	reserved map[string]*reservation // by user: the estimates of their calls in flight
}

// reservation is one user's calls in flight; mu orders a reserve's read
// of the usage after the charge of every call released before it.
type reservation struct {
	mu     sync.Mutex
	tokens int64
}

func (b *Budgets) reservationOf(user string) *reservation {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reserved == nil {
		b.reserved = map[string]*reservation{}
	}
	r := b.reserved[user]
	if r == nil {
		r = &reservation{}
		b.reserved[user] = r
	}
	return r
}

// Reserve admits a model call for user estimated at tokens: quota_exceeded
// when their usage and the reservations of their calls in flight reach
// their budget. done charges the call's usage and releases the
// reservation; call it once, when the call has ended (failed ones too).
func (b *Budgets) Reserve(ctx context.Context, user string, tokens int64) (done func(Usage), err error) {
	if b == nil {
		return func(Usage) {}, nil
	}
	budget, err := b.Of(ctx, user)
	if err != nil {
		return nil, err
	}
	if budget.IsZero() {
		return func(u Usage) { b.Charge(ctx, user, u) }, nil
	}
	res := b.reservationOf(user)
	res.mu.Lock()
	defer res.mu.Unlock()
	used, resets, err := b.Used(ctx, user, budget)
	if err != nil {
		return nil, fmt.Errorf("budget: %w", err)
	}
	if used+res.tokens >= budget.Tokens {
		return nil, overBudget(budget, used, res.tokens, resets)
	}
	tokens = max(tokens, 1)
	res.tokens += tokens
	var once sync.Once
	return func(u Usage) {
		once.Do(func() {
			b.Charge(ctx, user, u) // before the release: a reserve after it reads this usage
			res.mu.Lock()
			res.tokens -= tokens
			res.mu.Unlock()
		})
	}, nil
}

func overBudget(budget Budget, used, inFlight int64, resets time.Time) error {
	flight := ""
	if inFlight > 0 {
		flight = fmt.Sprintf(", %d more reserved by model calls running now", inFlight)
	}
	return Errorf(CodeQuotaExceeded, "the token budget of %s is used up (%d of %d tokens this %s%s); it resets at %s",
		budget, used, budget.Tokens, budget.Period, flight, resets.UTC().Format(time.RFC3339))
}

func (b *Budgets) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Of is the budget of user: their own, else the default.
func (b *Budgets) Of(ctx context.Context, user string) (Budget, error) {
	if b.Users != nil {
		u, err := b.Users.User(ctx, user)
		if err == nil && u.Budget != "" {
			return ParseBudget(u.Budget)
		}
		if err != nil && ErrorCode(err) != CodeNotFound {
			return Budget{}, err
		}
	}
	return b.def(), nil
}

// def is the default budget: the admin panel's, else Default.
func (b *Budgets) def() Budget {
	if v := b.Site.Values().DefaultBudget; v != nil {
		return *v
	}
	return b.Default
}

// Used is what user used in the window of budget that holds now, and
// when that window ends.
func (b *Budgets) Used(ctx context.Context, user string, budget Budget) (used int64, resets time.Time, err error) {
	start, end := budget.Window(b.now())
	if b.Usage == nil {
		return 0, end, nil
	}
	days, err := b.Usage.UsageDays(ctx, user, start.Format(DateFormat), end.Add(-time.Hour).Format(DateFormat))
	if err != nil {
		return 0, end, err
	}
	for _, d := range days {
		used += d.PromptTokens + d.CompletionTokens
	}
	return used, end, nil
}

// Check answers quota_exceeded when user's budget is used up.
func (b *Budgets) Check(ctx context.Context, user string) error {
	if b == nil {
		return nil
	}
	budget, err := b.Of(ctx, user)
	if err != nil || budget.IsZero() {
		return err
	}
	used, resets, err := b.Used(ctx, user, budget)
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	res := b.reservationOf(user)
	res.mu.Lock()
	inFlight := res.tokens
	res.mu.Unlock()
	if used+inFlight >= budget.Tokens {
		return overBudget(budget, used, inFlight, resets)
	}
	return nil
}

// Charge records a model call's usage for user (negative counts, which a
// model may report, count as 0).
func (b *Budgets) Charge(ctx context.Context, user string, u Usage) {
	if b == nil || b.Usage == nil {
		return
	}
	p, c := int64(max(u.PromptTokens, 0)), int64(max(u.CompletionTokens, 0))
	if p == 0 && c == 0 {
		return
	}
	if err := b.Usage.AddUsage(context.WithoutCancel(ctx), user, b.now().UTC().Format(DateFormat), p, c); err != nil && b.Log != nil {
		b.Log("usage_record_failed", "user_id", user, "err", err)
	}
}

// BudgetState is a user's budget now.
type BudgetState struct {
	Limit    string    `json:"limit"` // as ParseBudget reads it
	Tokens   int64     `json:"tokens"`
	Used     int64     `json:"used"`
	ResetsAt time.Time `json:"resets_at"`
}

// UsageReport is what GET /agentik/usage answers.
type UsageReport struct {
	Days   []UsageDay   `json:"days"`
	Budget *BudgetState `json:"budget,omitempty"`
}

// Report reports the tokens used per user and day in [from, to] (dates;
// "" for the last 31 days up to today): a member their own only (another
// user is forbidden), an admin anyone's ("" user: everyone's). One user's
// report carries their budget. A nil *Budgets reports no days.
func (b *Budgets) Report(ctx context.Context, user, from, to string) (UsageReport, error) {
	p := PrincipalFrom(ctx)
	if !p.Admin() {
		if user != "" && user != p.UserID {
			return UsageReport{}, Errorf(CodeForbidden, "a member sees their own usage only")
		}
		user = p.UserID
	}
	now := time.Now()
	if b != nil {
		now = b.now()
	}
	if to == "" {
		to = now.UTC().Format(DateFormat)
	}
	if from == "" {
		from = now.UTC().AddDate(0, 0, -30).Format(DateFormat)
	}
	for _, d := range []string{from, to} {
		if _, err := time.Parse(DateFormat, d); err != nil {
			return UsageReport{}, Errorf(CodeBadRequest, "from and to are dates like 2026-12-01, got %q", Shorten(d, 40))
		}
	}
	rep := UsageReport{Days: []UsageDay{}}
	if b == nil || b.Usage == nil {
		return rep, nil
	}
	days, err := b.Usage.UsageDays(ctx, user, from, to)
	if err != nil {
		return UsageReport{}, err
	}
	if days != nil {
		rep.Days = days
	}
	if user != "" {
		budget, err := b.Of(ctx, user)
		if err != nil {
			return UsageReport{}, err
		}
		if !budget.IsZero() {
			used, resets, err := b.Used(ctx, user, budget)
			if err != nil {
				return UsageReport{}, err
			}
			rep.Budget = &BudgetState{Limit: budget.String(), Tokens: budget.Tokens, Used: used, ResetsAt: resets}
		}
	}
	return rep, nil
}

// DefaultBudget is the server's budget of a user without one of their
// own (AGENTIK_DEFAULT_BUDGET, or the admin panel's); zero: none.
func (b *Budgets) DefaultBudget() Budget {
	if b == nil {
		return Budget{}
	}
	return b.def()
}
