package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// A rule that never matches is refused when made, with a bounded search,
// and so are rules that run more often than once a minute.
func TestScheduleRulesThatBurnCPURefused(t *testing.T) {
	t.Parallel()
	_, _, s := schedRig(t)
	ctx := context.Background()
	for _, c := range []struct{ rrule, cron, want string }{
		{rrule: "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30", want: "no slot in the next 5 years"},
		{rrule: "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", want: "no slot in the next 5 years"},
		{rrule: "FREQ=MINUTELY;BYSETPOS=-1;BYMONTH=2;BYMONTHDAY=30", want: "BYSETPOS"},
		{rrule: "FREQ=YEARLY;COUNT=1;BYMONTH=1;BYMONTHDAY=1;DTSTART=20200101T000000Z", want: "no slot in the next 5 years"},
		{cron: "0 0 30 2 *", want: "no slot in the next 5 years"},
		{rrule: "FREQ=SECONDLY", want: "once a minute"},
		{rrule: "FREQ=MINUTELY;BYSECOND=0,30", want: "once a minute"},
		{cron: "*/10 * * * * *", want: "seconds"},
		{cron: "@every 10s", want: "once a minute"},
	} {
		in := agent.ScheduleInput{Prompt: ptr("x")}
		if c.rrule != "" {
			in.RRule = &c.rrule
		} else {
			in.Cron = &c.cron
		}
		_, err := s.Create(ctx, in)
		if agent.ErrorCode(err) != agent.CodeBadRequest || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s%s: %v, want bad_request saying %q", c.rrule, c.cron, err, c.want)
		}
	}
	// Rare but real slots are found: Feb 29 (within 4 years), a leap day
	// on a Monday (28 years: beyond the horizon).
	if _, err := s.Create(ctx, agent.ScheduleInput{Prompt: ptr("x"), RRule: ptr("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29")}); err != nil {
		t.Errorf("Feb 29: %v", err)
	}
	if list, _ := s.List(ctx); len(list) != 1 || list[0].NextRun == nil || list[0].NextRun.Month() != time.February || list[0].NextRun.Day() != 29 {
		t.Errorf("list %+v, want the Feb 29 schedule with its next run", list)
	}
}

// A schedule's next slot is computed once per slot, not on every list or
// idle tick; a schedule keeps its slots when its search starts from its
// cursor (DTSTART's defaults carried).
func TestScheduleNextSlotComputedOnce(t *testing.T) {
	t.Parallel()
	_, clk, s := schedRig(t)
	ctx := context.Background()
	for _, r := range []string{"FREQ=WEEKLY;BYHOUR=9;BYMINUTE=15", "FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=8;BYMINUTE=0", "FREQ=DAILY"} {
		if _, err := s.Create(ctx, agent.ScheduleInput{Prompt: ptr("x"), RRule: &r}); err != nil {
			t.Fatal(err)
		}
	}
	base := agent.Walks(s)
	for range 10 {
		if _, err := s.List(ctx); err != nil {
			t.Fatal(err)
		}
		tick(t, s)
	}
	if n := agent.Walks(s) - base; n > 3 {
		t.Errorf("%d calendar walks for 10 lists and 10 idle ticks of 3 schedules, want at most 3", n)
	}
	// FREQ=DAILY takes its time of day from DTSTART (the creation): its
	// next runs are a day apart at that time.
	list, _ := s.List(ctx)
	for _, sc := range list {
		if !strings.Contains(sc.RRule, "FREQ=DAILY") {
			continue
		}
		up := s.Upcoming(sc, 3)
		if len(up) != 3 || !up[0].Equal(clk.Now().Add(24*time.Hour).Truncate(time.Second)) || up[2].Sub(up[1]) != 24*time.Hour {
			t.Errorf("daily upcoming %v from %v", up, clk.Now())
		}
	}
}

// One user may have AGENTIK_MAX_SCHEDULES schedules.
func TestScheduleCapPerUser(t *testing.T) {
	t.Parallel()
	g, clk, _ := schedRig(t)
	s := &agent.Scheduler{Runner: g.r, Store: g.st, Now: clk.Now, MaxPerUser: 2}
	ctx := context.Background()
	for range 2 {
		if _, err := s.Create(ctx, agent.ScheduleInput{Prompt: ptr("x"), Cron: ptr("0 9 * * *")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Create(ctx, agent.ScheduleInput{Prompt: ptr("x"), Cron: ptr("0 9 * * *")})
	if agent.ErrorCode(err) != agent.CodeBadRequest || !strings.Contains(err.Error(), "AGENTIK_MAX_SCHEDULES") {
		t.Fatalf("a third schedule: %v, want bad_request naming AGENTIK_MAX_SCHEDULES", err)
	}
}

// A disabled owner's schedules do not run (and say why); their slots
// meanwhile are not owed; deleting the owner deletes their schedules.
func TestScheduleOfDisabledOwnerHeld(t *testing.T) {
	t.Parallel()
	g, clk, _ := schedRig(t)
	s := &agent.Scheduler{Runner: g.r, Store: g.st, Now: clk.Now, Users: g.st}
	ctx := context.Background()
	ann := agent.User{ID: "ann", Name: "Ann", Role: agent.RoleMember, CreatedAt: time.Now()}
	if err := g.st.CreateUser(ctx, ann); err != nil {
		t.Fatal(err)
	}
	actx := agent.WithPrincipal(ctx, ann.Principal())
	sc, err := s.Create(actx, agent.ScheduleInput{Prompt: ptr("report"), Cron: ptr("0 * * * *")})
	if err != nil {
		t.Fatal(err)
	}
	ann.Disabled = true
	if err := g.st.UpdateUser(ctx, ann); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour)
	tick(t, s)
	if runs := runsOf(t, s, sc.ID); len(runs) != 0 {
		t.Fatalf("runs of a disabled owner's schedule: %+v", runs)
	}
	got, err := s.Get(ctx, sc.ID)
	if err != nil || got.Held == "" || got.NextRun != nil {
		t.Fatalf("a disabled owner's schedule: %+v %v, want held with no next run", got, err)
	}
	ann.Disabled = false
	if err := g.st.UpdateUser(ctx, ann); err != nil {
		t.Fatal(err)
	}
	tick(t, s)
	if runs := runsOf(t, s, sc.ID); len(runs) != 0 {
		t.Fatalf("a slot of while the owner was disabled ran: %+v", runs)
	}
	g.fake.Enqueue(llmtest.Reply{Text: "done"})
	clk.Add(time.Hour)
	tick(t, s)
	if runs := runsOf(t, s, sc.ID); len(runs) != 1 || runs[0].Outcome != agent.RunStarted {
		t.Fatalf("after the owner is enabled: %+v, want the next slot run", runs)
	}
	waitIdle(t, g.r, runsOf(t, s, sc.ID)[0].ConversationID)
	if err := g.st.DeleteUser(ctx, ann.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := g.st.Schedule(ctx, sc.ID); agent.ErrorCode(err) != agent.CodeNotFound {
		t.Fatalf("the deleted owner's schedule: %v, want not_found", err)
	}
}

// A run refused for the budget is a failed run that names why, with no
// conversation made for it.
func TestScheduleRunOverBudgetMakesNoConversation(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) {
		c.Budgets = &agent.Budgets{Default: agent.Budget{Tokens: 10, Period: "day"}}
	})
	clk := newFakeClock()
	s := &agent.Scheduler{Runner: g.r, Store: g.st, Now: clk.Now}
	ctx := context.Background()
	if err := g.st.AddUsage(ctx, agent.LocalUser, time.Now().UTC().Format(agent.DateFormat), 10, 0); err != nil {
		t.Fatal(err)
	}
	sc, err := s.Create(ctx, agent.ScheduleInput{Prompt: ptr("report"), Cron: ptr("0 * * * *")})
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour)
	tick(t, s)
	runs := runsOf(t, s, sc.ID)
	if len(runs) != 1 || runs[0].Outcome != agent.RunFailed || !strings.Contains(runs[0].Error, "budget") || runs[0].ConversationID != "" {
		t.Fatalf("runs %+v, want one failed for the budget, without a conversation", runs)
	}
	convs, _, err := g.cs.List(ctx, 0, 10)
	if err != nil || len(convs) != 0 {
		t.Fatalf("conversations %+v %v, want none", convs, err)
	}
}
