package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// The memory ops (docs/PROTOCOL.md, Memory), each the REST route under
// /agentik/memory and the WebSocket op of its name (op.go): the runner
// reads and writes the principal's own memory only.

// memoryRef names one block of one agent's memory: ?agent= (or the
// command's agent) and the route's {label}.
type memoryRef struct {
	Agent string `json:"agent"`
	Label string `json:"label"`
}

func (r *memoryRef) check() error { return need("label", r.Label) }

// memoryWrite is a put_memory: the block and its new value (and limit).
type memoryWrite struct {
	memoryRef
	agent.MemoryInput
}

// memoryChangesQuery is a list_memory_changes: ?agent=&limit= (a number
// on the WebSocket, a query parameter's text over REST).
type memoryChangesQuery struct {
	Agent string      `json:"agent"`
	Limit json.Number `json:"limit"`
}

// changeRef names one memory change: the route's {change_id}.
type changeRef struct {
	ID string `json:"change_id"`
}

func (r *changeRef) check() error { return need("change_id", r.ID) }

var (
	opGetMemory = declare(protocol.OpGetMemory, 0, func(ctx context.Context, s *Server, in struct {
		Agent string `json:"agent"`
	}) (any, error) {
		bs, err := s.cfg.Memory.Blocks(ctx, in.Agent)
		if err != nil {
			return nil, err
		}
		return protocol.MemoryResult{Blocks: bs}, nil
	})
	opPutMemory = declare(protocol.OpPutMemory, 0, func(ctx context.Context, s *Server, in memoryWrite) (any, error) {
		return written(s.cfg.Memory.Put(ctx, in.Agent, in.Label, in.MemoryInput))
	})
	opClearMemory = declare(protocol.OpClearMemory, 0, func(ctx context.Context, s *Server, in memoryRef) (any, error) {
		return written(s.cfg.Memory.Clear(ctx, in.Agent, in.Label))
	})
	opRevertMemory = declare(protocol.OpRevertMemory, 0, func(ctx context.Context, s *Server, in changeRef) (any, error) {
		return written(s.cfg.Memory.Revert(ctx, in.ID))
	})
	opListMemoryChanges = declare(protocol.OpListMemoryChanges, 0, func(ctx context.Context, s *Server, in memoryChangesQuery) (any, error) {
		limit, err := limitOf(in.Limit)
		if err != nil {
			return nil, err
		}
		cs, err := s.cfg.Memory.Changes(ctx, in.Agent, limit)
		if err != nil {
			return nil, err
		}
		return protocol.MemoryChangesResult{Changes: nonNil(cs)}, nil
	})
)

// written is the answer of a memory write.
func written(ch agent.MemoryChange, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return protocol.WrittenMemory(ch), nil
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
	p.Title, p.Nav = "Memory · agentik", "memory"
	v := &web.MemoryView{Agent: r.URL.Query().Get("agent")}
	if v.Agent == "" {
		v.Agent = agent.DefaultAgent
	}
	v.Blocks, err = s.cfg.Memory.Blocks(ctx, v.Agent)
	switch {
	case agent.ErrorCode(err) == agent.CodeUnavailable:
		v.Off = true
	case err != nil:
		s.pageError(w, r, err)
		return
	default:
		if v.Changes, err = s.cfg.Memory.Changes(ctx, v.Agent, memoryPageChanges); err != nil {
			s.pageError(w, r, err)
			return
		}
		ds, err := s.cfg.Agents.List(ctx)
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
