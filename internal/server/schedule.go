package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
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

// schedulesResult is the result of list_schedules.
type schedulesResult struct {
	Schedules []agent.Schedule `json:"schedules"`
}

// scheduleRunsResult is the result of list_schedule_runs.
type scheduleRunsResult struct {
	Runs []agent.ScheduleRun `json:"runs"`
}

var (
	opListSchedules = declare(protocol.OpListSchedules, 0, func(ctx context.Context, s *Server, _ struct{}) (any, error) {
		sch, err := s.scheduler()
		if err != nil {
			return nil, err
		}
		scs, err := sch.List(ctx)
		if err != nil {
			return nil, err
		}
		return schedulesResult{Schedules: nonNil(scs)}, nil
	})
	opGetSchedule = declare(protocol.OpGetSchedule, 0, func(ctx context.Context, s *Server, in scheduleRef) (any, error) {
		sch, err := s.scheduler()
		if err != nil {
			return nil, err
		}
		return sch.Get(ctx, in.ID)
	})
	opCreateSchedule = declare(protocol.OpCreateSchedule, http.StatusCreated, func(ctx context.Context, s *Server, in agent.ScheduleInput) (any, error) {
		sch, err := s.scheduler()
		if err != nil {
			return nil, err
		}
		return sch.Create(ctx, in)
	})
	opUpdateSchedule = declare(protocol.OpUpdateSchedule, 0, func(ctx context.Context, s *Server, in scheduleChange) (any, error) {
		sch, err := s.scheduler()
		if err != nil {
			return nil, err
		}
		return sch.Update(ctx, in.ID, in.ScheduleInput)
	})
	opDeleteSchedule = declare(protocol.OpDeleteSchedule, 0, func(ctx context.Context, s *Server, in scheduleRef) (any, error) {
		sch, err := s.scheduler()
		if err != nil {
			return nil, err
		}
		return okReply{OK: true}, sch.Delete(ctx, in.ID)
	})
	opListScheduleRuns = declare(protocol.OpListScheduleRuns, 0, func(ctx context.Context, s *Server, in scheduleRef) (any, error) {
		sch, err := s.scheduler()
		if err != nil {
			return nil, err
		}
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
