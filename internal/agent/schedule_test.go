package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
)

// fakeClock is a clock the test moves. It starts a year ahead of the real
// time, so the rig's own scheduler loop (real clock) never finds these
// schedules' slots due.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Now().Add(365 * 24 * time.Hour).Truncate(time.Hour).Add(30 * time.Minute)}
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func ptr[T any](v T) *T { return &v }

func schedRig(t *testing.T) (*rig, *fakeClock, *agent.Scheduler) {
	g := newRig(t, nil)
	clk := newFakeClock()
	return g, clk, &agent.Scheduler{Runner: g.r, Store: g.st, Now: clk.Now}
}

func tick(t *testing.T, s *agent.Scheduler) {
	t.Helper()
	if err := s.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func runsOf(t *testing.T, s *agent.Scheduler, id string) []agent.ScheduleRun {
	t.Helper()
	runs, err := s.Runs(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func TestScheduleNextRunAndBadInput(t *testing.T) {
	t.Parallel()
	_, clk, s := schedRig(t)
	ctx := context.Background()
	now := clk.Now()
	sc, err := s.Create(ctx, agent.ScheduleInput{Prompt: ptr("hi"), RRule: ptr("FREQ=HOURLY;COUNT=3"), Timezone: ptr("Europe/Paris")})
	if err != nil {
		t.Fatal(err)
	}
	if sc.NextRun == nil || !sc.NextRun.Equal(now.Add(time.Hour)) && !sc.NextRun.Equal(now) {
		t.Fatalf("next_run %v, want %v (DTSTART) or an hour later", sc.NextRun, now)
	}
	if !strings.HasPrefix(sc.RRule, "DTSTART;TZID=Europe/Paris:") || sc.Missed != agent.MissedOnce {
		t.Fatalf("rrule %q missed %q", sc.RRule, sc.Missed)
	}
	// Cron: weekdays at 9:00 in New York.
	sc2, err := s.Create(ctx, agent.ScheduleInput{Prompt: ptr("hi"), Cron: ptr("0 9 * * 1-5"), Timezone: ptr("America/New_York")})
	if err != nil {
		t.Fatal(err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	nr := sc2.NextRun.In(ny)
	if nr.Hour() != 9 || nr.Minute() != 0 || nr.Weekday() == time.Saturday || nr.Weekday() == time.Sunday || !nr.After(now) || nr.Sub(now) > 4*24*time.Hour {
		t.Fatalf("cron next_run %v", nr)
	}
	for _, c := range []struct {
		in    agent.ScheduleInput
		field string
	}{
		{agent.ScheduleInput{Prompt: ptr("x"), RRule: ptr("FREQ=SOMETIMES")}, "rrule"},
		{agent.ScheduleInput{Prompt: ptr("x"), Cron: ptr("61 * * * *")}, "cron"},
		{agent.ScheduleInput{Prompt: ptr("x"), Cron: ptr("* * * * *"), Timezone: ptr("Mars/Olympus")}, "timezone"},
		{agent.ScheduleInput{Prompt: ptr("x"), Cron: ptr("* * * * *"), Missed: ptr("all")}, "missed"},
		{agent.ScheduleInput{Prompt: ptr("x"), Cron: ptr("* * * * *"), ConversationID: ptr("nope")}, "conversation_id"},
		{agent.ScheduleInput{Cron: ptr("* * * * *")}, "prompt"},
		{agent.ScheduleInput{Prompt: ptr("x"), Cron: ptr("* * * * *"), Agent: ptr("no-such-agent")}, "agent"},
	} {
		_, err := s.Create(ctx, c.in)
		if agent.ErrorCode(err) != agent.CodeBadRequest || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want bad_request naming it", c.field, err)
		}
	}
	if _, err := s.Update(ctx, sc.ID, agent.ScheduleInput{Timezone: ptr("Nowhere/Else")}); agent.ErrorCode(err) != agent.CodeBadRequest {
		t.Errorf("patch timezone: %v", err)
	}
	got, err := s.Get(ctx, sc.ID)
	if err != nil || got.Timezone != "Europe/Paris" {
		t.Errorf("after a bad patch: %+v %v", got, err)
	}
	list, _ := s.List(ctx)
	if len(list) != 2 {
		t.Errorf("%d schedules stored, want 2", len(list))
	}
}

// Missed slots while stopped: skip runs none of them, once runs one.
func TestScheduleMissedSlots(t *testing.T) {
	t.Parallel()
	for _, missed := range []string{agent.MissedSkip, agent.MissedOnce} {
		t.Run(missed, func(t *testing.T) {
			g, clk, s := schedRig(t)
			sc, err := s.Create(context.Background(), agent.ScheduleInput{Prompt: ptr("good morning"), Cron: ptr("0 * * * *"), Missed: ptr(missed)})
			if err != nil {
				t.Fatal(err)
			}
			tick(t, s) // nothing due yet (created at :30)
			clk.Add(5 * time.Hour)
			tick(t, s)
			tick(t, s)
			runs := runsOf(t, s, sc.ID)
			want := map[string]int{agent.MissedSkip: 0, agent.MissedOnce: 1}[missed]
			if len(runs) != want {
				t.Fatalf("%d runs, want %d: %+v", len(runs), want, runs)
			}
			if want == 1 {
				if !runs[0].Slot.Equal(clk.Now().Truncate(time.Hour)) {
					t.Errorf("ran slot %v, want the latest missed %v", runs[0].Slot, clk.Now().Truncate(time.Hour))
				}
				waitIdle(t, g.r, runs[0].ConversationID)
				ms := g.history(agent.Conversation{ID: runs[0].ConversationID})
				if len(ms) != 2 || ms[1].Type != "assistant_message" {
					t.Fatalf("run's conversation: %+v", ms)
				}
			}
			// The next slot, on time, runs under either policy.
			clk.Add(30 * time.Minute)
			tick(t, s)
			if n := len(runsOf(t, s, sc.ID)); n != want+1 {
				t.Errorf("%d runs after an on-time slot, want %d", n, want+1)
			}
		})
	}
}

// A claimed slot never runs twice: not on a second tick, not from another
// scheduler (another instance) whose cursor is behind.
func TestScheduleSlotClaimedOnce(t *testing.T) {
	t.Parallel()
	g, clk, s := schedRig(t)
	ctx := context.Background()
	c := g.create(false)
	sc, err := s.Create(ctx, agent.ScheduleInput{Prompt: ptr("ping"), RRule: ptr("FREQ=MINUTELY;COUNT=2"), ConversationID: ptr(c.ID)})
	if err != nil {
		t.Fatal(err)
	}
	other := &agent.Scheduler{Runner: g.r, Store: g.st, Now: clk.Now}
	tick(t, s)
	tick(t, s)
	tick(t, other)
	if runs := runsOf(t, s, sc.ID); len(runs) != 1 || runs[0].ConversationID != c.ID {
		t.Fatalf("runs %+v, want one in %s", runs, c.ID)
	}
	// Put the cursor back, as if another instance had read the schedule
	// before the claim: the claim still holds.
	stored, err := g.st.Schedule(ctx, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored.Cursor = stored.CreatedAt.Add(-time.Minute)
	if err := g.st.PutSchedule(ctx, stored); err != nil {
		t.Fatal(err)
	}
	tick(t, other)
	if runs := runsOf(t, s, sc.ID); len(runs) != 1 {
		t.Fatalf("runs %+v after a replay, want 1", runs)
	}
	clk.Add(time.Minute)
	tick(t, other)
	tick(t, s)
	clk.Add(time.Minute) // COUNT=2: no third slot
	tick(t, s)
	runs := runsOf(t, s, sc.ID)
	if len(runs) != 2 {
		t.Fatalf("runs %+v, want 2", runs)
	}
	// Both turns end, one after the other (the second queued or started
	// after the first): two ends in the conversation's log, then two
	// questions and two answers in its history.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	untilEnd(t, ctx, sub)
	untilEnd(t, ctx, sub)
	users, answers := 0, 0
	for _, m := range g.history(c) {
		switch m.Type {
		case "user_message":
			users++
		case "assistant_message":
			answers++
		}
	}
	if users != 2 || answers != 2 {
		t.Fatalf("%d user messages, %d answers in the target conversation, want 2 and 2 (runs %+v)", users, answers, runs)
	}
}

// Upcoming lists the next slots in the schedule's time zone, ends with the
// rule (COUNT), and is empty when disabled.
func TestScheduleUpcoming(t *testing.T) {
	t.Parallel()
	_, clk, s := schedRig(t)
	ctx := context.Background()
	sc, err := s.Create(ctx, agent.ScheduleInput{Prompt: ptr("p"), Cron: ptr("0 9 * * *"), Timezone: ptr("Europe/Paris")})
	if err != nil {
		t.Fatal(err)
	}
	up := s.Upcoming(sc, 3)
	if len(up) != 3 {
		t.Fatalf("upcoming %v", up)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	for i, u := range up {
		if l := u.In(paris); l.Hour() != 9 || l.Minute() != 0 || !u.After(clk.Now()) {
			t.Fatalf("slot %d: %v", i, l)
		}
		if i > 0 && u.Sub(up[i-1]) < 23*time.Hour {
			t.Fatalf("slots %v", up)
		}
	}
	if sc.NextRun == nil || !sc.NextRun.Equal(up[0]) {
		t.Fatalf("next_run %v, upcoming[0] %v", sc.NextRun, up[0])
	}
	// DTSTART is now: its first slot is due at once, two are to come.
	two, err := s.Create(ctx, agent.ScheduleInput{Prompt: ptr("p"), RRule: ptr("FREQ=HOURLY;COUNT=3")})
	if err != nil {
		t.Fatal(err)
	}
	if up := s.Upcoming(two, 5); len(up) != 2 {
		t.Fatalf("COUNT=3 upcoming %v", up)
	}
	off, err := s.Update(ctx, sc.ID, agent.ScheduleInput{Enabled: ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if up := s.Upcoming(off, 3); len(up) != 0 {
		t.Fatalf("disabled upcoming %v", up)
	}
}

// TestScheduleClaimedWhenClaimed: a run's claim is dated when it is
// claimed, not when its tick began. Another instance takes over a run
// claimed more than 10 s ago that has not started; in a tick slower than
// that (here each reading of the clock takes 11 s), a run claimed late in
// the tick must not look stale.
func TestScheduleClaimedWhenClaimed(t *testing.T) {
	t.Parallel()
	g, clk, s := schedRig(t)
	ctx := context.Background()
	c := g.create(false)
	sc, err := s.Create(ctx, agent.ScheduleInput{Prompt: ptr("ping"), RRule: ptr("FREQ=MINUTELY;COUNT=2"), ConversationID: ptr(c.ID)})
	if err != nil {
		t.Fatal(err)
	}
	var began time.Time
	slow := &agent.Scheduler{Runner: g.r, Store: g.st, Now: func() time.Time {
		clk.Add(11 * time.Second)
		now := clk.Now()
		if began.IsZero() {
			began = now // the tick's first reading: its start
		}
		return now
	}}
	tick(t, slow)
	runs := runsOf(t, s, sc.ID)
	if len(runs) != 1 || !runs[0].ClaimedAt.After(began) {
		t.Fatalf("runs %+v: want one, claimed after the tick began at %v", runs, began)
	}
}
