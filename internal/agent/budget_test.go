package agent_test

import (
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

func TestParseBudget(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]agent.Budget{
		"2M/month": {Tokens: 2_000_000, Period: "month"}, "500k/day": {Tokens: 500_000, Period: "day"},
		"1.5M/week": {Tokens: 1_500_000, Period: "week"}, "100000/Day": {Tokens: 100_000, Period: "day"},
		"": {}, "none": {},
	} {
		got, err := agent.ParseBudget(in)
		if err != nil || got != want {
			t.Errorf("ParseBudget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"2M", "two million/month", "-5/day", "0/day", "5/year", "5k/", "/month"} {
		if _, err := agent.ParseBudget(in); agent.ErrorCode(err) != agent.CodeBadRequest {
			t.Errorf("ParseBudget(%q): %v, want bad_request", in, err)
		}
	}
	b, _ := agent.ParseBudget("2M/month")
	if b.String() != "2M/month" {
		t.Errorf("String() = %q", b.String())
	}
	at := time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC) // a Thursday
	for period, want := range map[string][2]string{
		"day":   {"2026-12-31", "2027-01-01"},
		"week":  {"2026-12-28", "2027-01-04"},
		"month": {"2026-12-01", "2027-01-01"},
	} {
		s, e := agent.Budget{Tokens: 1, Period: period}.Window(at)
		if s.Format(agent.DateFormat) != want[0] || e.Format(agent.DateFormat) != want[1] {
			t.Errorf("%s window of %v: %v – %v, want %v", period, at, s, e, want)
		}
	}
}
