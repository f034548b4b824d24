package agent

import (
	"strconv"
	"strings"
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
