package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// The memory routes (docs/PROTOCOL.md, Memory): REST under /agentik/memory
// and the WebSocket ops of the same names run the same use cases of the
// runner, which reads and writes the principal's own memory only.

func (s *Server) handleMemory(w http.ResponseWriter, r *http.Request) {
	res, err := s.memory(r.Context(), r.URL.Query().Get("agent"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) memory(ctx context.Context, agentSlug string) (protocol.MemoryResult, error) {
	bs, err := s.runner.Memory(ctx, agentSlug)
	if err != nil {
		return protocol.MemoryResult{}, err
	}
	return protocol.MemoryResult{Blocks: bs}, nil
}

func (s *Server) handlePutMemory(w http.ResponseWriter, r *http.Request) {
	var in agent.MemoryInput
	if err := decodeBody(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	ch, err := s.runner.PutMemory(r.Context(), r.URL.Query().Get("agent"), r.PathValue("label"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.WrittenMemory(ch))
}

func (s *Server) handleClearMemory(w http.ResponseWriter, r *http.Request) {
	ch, err := s.runner.ClearMemory(r.Context(), r.URL.Query().Get("agent"), r.PathValue("label"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.WrittenMemory(ch))
}

func (s *Server) handleMemoryChanges(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", agent.DefaultMemoryChanges)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cs, err := s.runner.MemoryChanges(r.Context(), r.URL.Query().Get("agent"), int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.MemoryChangesResult{Changes: cs})
}

func (s *Server) handleRevertMemory(w http.ResponseWriter, r *http.Request) {
	ch, err := s.runner.RevertMemory(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.WrittenMemory(ch))
}

// memoryOp runs the memory ops of the WebSocket; ok is false for other ops.
func (s *Server) memoryOp(ctx context.Context, cmd protocol.Command) (res any, ok bool, err error) {
	slug := ""
	if cmd.Agent != nil {
		slug = *cmd.Agent
	}
	var ch agent.MemoryChange
	switch cmd.Op {
	case protocol.OpGetMemory:
		res, err := s.memory(ctx, slug)
		return res, true, err
	case protocol.OpListMemoryChanges:
		limit := 0
		if cmd.Limit != nil {
			limit = *cmd.Limit
		}
		cs, err := s.runner.MemoryChanges(ctx, slug, limit)
		return protocol.MemoryChangesResult{Changes: cs}, true, err
	case protocol.OpPutMemory:
		ch, err = s.runner.PutMemory(ctx, slug, cmd.Label, agent.MemoryInput{Value: cmd.Value, Limit: cmd.Limit})
	case protocol.OpClearMemory:
		ch, err = s.runner.ClearMemory(ctx, slug, cmd.Label)
	case protocol.OpRevertMemory:
		ch, err = s.runner.RevertMemory(ctx, cmd.ChangeID)
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return protocol.WrittenMemory(ch), true, nil
}

// handleMemoryPage is the memory page: the principal's blocks of one
// agent (?agent=, the default agent without it) and their recent changes.
func (s *Server) handleMemoryPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, err := s.page(ctx, "")
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	p.Title = "Memory · agentik"
	v := &web.MemoryView{Agent: r.URL.Query().Get("agent")}
	if v.Agent == "" {
		v.Agent = agent.DefaultAgent
	}
	v.Blocks, err = s.runner.Memory(ctx, v.Agent)
	switch {
	case agent.ErrorCode(err) == agent.CodeUnavailable:
		v.Off = true
	case err != nil:
		s.pageError(w, r, err)
		return
	default:
		if v.Changes, err = s.runner.MemoryChanges(ctx, v.Agent, memoryPageChanges); err != nil {
			s.pageError(w, r, err)
			return
		}
		ds, err := s.runner.Agents(ctx)
		if err != nil {
			s.pageError(w, r, err)
			return
		}
		for _, d := range ds {
			v.Agents = append(v.Agents, web.MemoryAgent{Slug: d.Slug, Name: d.Name})
		}
	}
	p.Memory = v
	s.renderPage(w, r, http.StatusOK, p)
}

// memoryPageChanges is how many recent changes the memory page lists.
const memoryPageChanges = 20
