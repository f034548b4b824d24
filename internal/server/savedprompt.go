package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// The prompt library's and the preferences' ops (DESIGN.md §12.5a), each
// the REST route and the WebSocket op of its name (op.go);
// agent.PromptLibrary and agent.PreferencesService decide who reads and
// changes what.

// promptRef is a prompt op's {prompt_id}, with the changes of an update.
type promptRef struct {
	ID string `json:"prompt_id"`
	agent.SavedPromptInput
}

func (in *promptRef) check() error { return need("prompt_id", in.ID) }

// promptsResult is list_prompts' result.
type promptsResult struct {
	Prompts []agent.SavedPrompt `json:"prompts"`
}

// promptOp declares a prompt library op: run gets the server's library
// (unavailable when it has none).
func promptOp[T any](name string, status int, run func(ctx context.Context, pl *agent.PromptLibrary, in T) (any, error)) *op {
	return declare(name, status, func(ctx context.Context, s *Server, in T) (any, error) {
		if s.cfg.Prompts == nil {
			return nil, agent.Errorf(agent.CodeUnavailable, "this server keeps no prompt library")
		}
		return run(ctx, s.cfg.Prompts, in)
	})
}

// preferencesOp declares a preferences op.
func preferencesOp[T any](name string, run func(ctx context.Context, ps *agent.PreferencesService, in T) (any, error)) *op {
	return declare(name, 0, func(ctx context.Context, s *Server, in T) (any, error) {
		if s.cfg.Preferences == nil {
			return nil, agent.Errorf(agent.CodeUnavailable, "this server keeps no settings")
		}
		return run(ctx, s.cfg.Preferences, in)
	})
}

var (
	opListSavedPrompts = promptOp(protocol.OpListSavedPrompts, 0, func(ctx context.Context, pl *agent.PromptLibrary, _ struct{}) (any, error) {
		list, err := pl.List(ctx)
		if err != nil {
			return nil, err
		}
		return promptsResult{Prompts: list}, nil
	})
	opCreateSavedPrompt = promptOp(protocol.OpCreateSavedPrompt, http.StatusCreated, func(ctx context.Context, pl *agent.PromptLibrary, in agent.SavedPromptInput) (any, error) {
		return pl.Create(ctx, in)
	})
	opUpdateSavedPrompt = promptOp(protocol.OpUpdateSavedPrompt, 0, func(ctx context.Context, pl *agent.PromptLibrary, in promptRef) (any, error) {
		return pl.Update(ctx, in.ID, in.SavedPromptInput)
	})
	opDeleteSavedPrompt = promptOp(protocol.OpDeleteSavedPrompt, http.StatusNoContent, func(ctx context.Context, pl *agent.PromptLibrary, in promptRef) (any, error) {
		return nil, pl.Delete(ctx, in.ID)
	})
	opGetPreferences = preferencesOp(protocol.OpGetPreferences, func(ctx context.Context, ps *agent.PreferencesService, _ struct{}) (any, error) {
		return ps.Mine(ctx)
	})
	opUpdatePreferences = preferencesOp(protocol.OpUpdatePreferences, func(ctx context.Context, ps *agent.PreferencesService, in agent.PreferencesInput) (any, error) {
		return ps.Update(ctx, in)
	})
)
