package server

import (
	"net/http"

	"github.com/agentik/agentik/internal/agent"
)

// The REST routes of schedules (DESIGN.md §11.9): agent.Scheduler decides
// who may see and change which (an owner theirs, an admin all).

func (s *Server) schedules(w http.ResponseWriter, r *http.Request) (*agent.Scheduler, bool) {
	if s.cfg.Schedules == nil {
		s.writeError(w, r, agent.Errorf(agent.CodeUnavailable, "this server runs no schedules"))
		return nil, false
	}
	return s.cfg.Schedules, true
}

func (s *Server) handleCreateSchedule(w http.ResponseWriter, r *http.Request) {
	sch, ok := s.schedules(w, r)
	if !ok {
		return
	}
	var in agent.ScheduleInput
	if err := decodeBody(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	sc, err := sch.Create(r.Context(), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sc)
}

func (s *Server) handleSchedules(w http.ResponseWriter, r *http.Request) {
	sch, ok := s.schedules(w, r)
	if !ok {
		return
	}
	scs, err := sch.List(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if scs == nil {
		scs = []agent.Schedule{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": scs})
}

func (s *Server) handleSchedule(w http.ResponseWriter, r *http.Request) {
	sch, ok := s.schedules(w, r)
	if !ok {
		return
	}
	sc, err := sch.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sc)
}

func (s *Server) handleUpdateSchedule(w http.ResponseWriter, r *http.Request) {
	sch, ok := s.schedules(w, r)
	if !ok {
		return
	}
	var in agent.ScheduleInput
	if err := decodeBody(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	sc, err := sch.Update(r.Context(), r.PathValue("id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sc)
}

func (s *Server) handleDeleteSchedule(w http.ResponseWriter, r *http.Request) {
	sch, ok := s.schedules(w, r)
	if !ok {
		return
	}
	if err := sch.Delete(r.Context(), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) handleScheduleRuns(w http.ResponseWriter, r *http.Request) {
	sch, ok := s.schedules(w, r)
	if !ok {
		return
	}
	runs, err := sch.Runs(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if runs == nil {
		runs = []agent.ScheduleRun{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs})
}
