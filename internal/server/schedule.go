package server

import (
	"cmp"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// The schedule ops (DESIGN.md §11.9), each the REST route under
// /agentik/schedules and the WebSocket op of its name (op.go):
// agent.Scheduler decides who may see and change which (an owner theirs,
// an admin all).

// scheduleRef names one schedule: the route's {schedule_id}.
type scheduleRef struct {
	ID string `json:"schedule_id"`
}

func (r *scheduleRef) check() error { return need("schedule_id", r.ID) }

// scheduleChange is a schedule's new fields, for update_schedule.
type scheduleChange struct {
	scheduleRef
	agent.ScheduleInput
}

func (s *Server) scheduler() (*agent.Scheduler, error) {
	if s.cfg.Schedules == nil {
		return nil, agent.Errorf(agent.CodeUnavailable, "this server runs no schedules")
	}
	return s.cfg.Schedules, nil
}

// scheduleOp declares a schedule op: run gets the server's scheduler
// (unavailable when it runs none).
func scheduleOp[T any](name string, status int, run func(ctx context.Context, sch *agent.Scheduler, in T) (any, error)) *op {
	return declare(name, status, func(ctx context.Context, s *Server, in T) (any, error) {
		sch, err := s.scheduler()
		if err != nil {
			return nil, err
		}
		return run(ctx, sch, in)
	})
}

// schedulesResult is the result of list_schedules.
type schedulesResult struct {
	Schedules []agent.Schedule `json:"schedules"`
}

// scheduleRunsResult is the result of list_schedule_runs.
type scheduleRunsResult struct {
	Runs []agent.ScheduleRun `json:"runs"`
}

var (
	opListSchedules = scheduleOp(protocol.OpListSchedules, 0, func(ctx context.Context, sch *agent.Scheduler, _ struct{}) (any, error) {
		scs, err := sch.List(ctx)
		if err != nil {
			return nil, err
		}
		return schedulesResult{Schedules: nonNil(scs)}, nil
	})
	opGetSchedule = scheduleOp(protocol.OpGetSchedule, 0, func(ctx context.Context, sch *agent.Scheduler, in scheduleRef) (any, error) {
		return sch.Get(ctx, in.ID)
	})
	opCreateSchedule = scheduleOp(protocol.OpCreateSchedule, http.StatusCreated, func(ctx context.Context, sch *agent.Scheduler, in agent.ScheduleInput) (any, error) {
		return sch.Create(ctx, in)
	})
	opUpdateSchedule = scheduleOp(protocol.OpUpdateSchedule, 0, func(ctx context.Context, sch *agent.Scheduler, in scheduleChange) (any, error) {
		return sch.Update(ctx, in.ID, in.ScheduleInput)
	})
	opDeleteSchedule = scheduleOp(protocol.OpDeleteSchedule, 0, func(ctx context.Context, sch *agent.Scheduler, in scheduleRef) (any, error) {
		return okReply{OK: true}, sch.Delete(ctx, in.ID)
	})
	opListScheduleRuns = scheduleOp(protocol.OpListScheduleRuns, 0, func(ctx context.Context, sch *agent.Scheduler, in scheduleRef) (any, error) {
		runs, err := sch.Runs(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		return scheduleRunsResult{Runs: nonNil(runs)}, nil
	})
)

// nonNil is xs, or an empty slice for nil (a list answers [], not null).
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// slotTime is a slot as the page shows it: in the schedule's time zone,
// and the instant for the script, which writes it in the reader's.
func slotTime(t time.Time, tz string) web.Slot {
	s := web.Slot{At: t.UTC().Format(time.RFC3339)}
	if loc, err := time.LoadLocation(tz); err == nil {
		t = t.In(loc)
	}
	s.Text = t.Format("Mon 2 Jan 2006 15:04 MST")
	return s
}

// pickerMinutes are the "every N minutes" the picker offers under the
// shortest interval a schedule may have, and whether it offers "every
// hour".
func pickerMinutes(least time.Duration) (ns []int, hourly bool) {
	least = cmp.Or(least, agent.DefaultMinInterval)
	for _, n := range web.PickerMinutes {
		if time.Duration(n)*time.Minute >= least {
			ns = append(ns, n)
		}
	}
	return ns, time.Hour >= least
}

// scheduleRow is sc as the schedules page shows it.
func (s *Server) scheduleRow(ctx context.Context, sch *agent.Scheduler, sc agent.Schedule, agents map[string]string) (web.ScheduleRow, error) {
	row := web.ScheduleRow{ID: sc.ID, Owner: sc.Owner, Prompt: sc.Prompt, Timezone: sc.Timezone, Missed: sc.Missed,
		Enabled: sc.Enabled, ConversationID: sc.ConversationID, Kind: "cron", Rule: sc.Cron, FullRule: sc.Cron}
	if sc.Agent != "" {
		row.Agent = cmp.Or(agents[sc.Agent], sc.Agent)
	}
	if sc.RRule != "" {
		row.Kind, row.FullRule = "rrule", sc.RRule
		for _, l := range strings.Split(sc.RRule, "\n") {
			if r, ok := strings.CutPrefix(l, "RRULE:"); ok {
				row.Rule = r
			}
		}
		row.Words = web.RuleWords(row.Rule)
	}
	for _, t := range sch.Upcoming(sc, 3) {
		row.Next = append(row.Next, slotTime(t, sc.Timezone))
	}
	runs, err := sch.Runs(ctx, sc.ID)
	if err != nil {
		return row, err
	}
	for i := len(runs) - 1; i >= 0 && len(row.Runs) < web.ScheduleRuns; i-- {
		r := runs[i]
		row.Runs = append(row.Runs, web.RunRow{Slot: slotTime(r.Slot, sc.Timezone), Outcome: r.Outcome, Error: r.Error, ConversationID: r.ConversationID})
	}
	// Whether the latest run's turn still runs (one read a schedule: an
	// earlier run's has ended but for a queue, rare).
	if len(row.Runs) > 0 && row.Runs[0].ConversationID != "" && row.Runs[0].Outcome != agent.RunFailed {
		if c, err := s.convs.Get(ctx, row.Runs[0].ConversationID); err == nil {
			row.Runs[0].Running = c.Running
		}
	}
	row.MoreRuns = len(runs) - len(row.Runs)
	return row, nil
}

// handleSchedulesPage is the page of schedules: the caller's (an admin's:
// everyone's), their next slots and latest runs, and the form.
func (s *Server) handleSchedulesPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sch, err := s.scheduler()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	scs, err := sch.List(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defs, err := s.cfg.Agents.List(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p := web.SchedulesPage{Admin: agent.PrincipalFrom(ctx).Admin()}
	p.EveryMinutes, p.Hourly = pickerMinutes(sch.MinInterval)
	names := map[string]string{}
	for _, d := range defs {
		names[d.Slug] = d.Name
		p.Agents = append(p.Agents, web.AgentOption{Slug: d.Slug, Name: d.Name})
	}
	for _, sc := range scs {
		row, err := s.scheduleRow(ctx, sch, sc, names)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		p.Schedules = append(p.Schedules, row)
	}
	s.renderSection(w, r, "schedules", "Schedules", web.Schedules(p))
}
