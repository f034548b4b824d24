package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/knowledge"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/demo"
)

// newFiles makes the files service over the database: extraction by
// package knowledge, embeddings by the configured model's provider.
// Its project index is the runner's (projects' members read their bases).
func newFiles(cfg Settings, a *App, providers *llm.Providers, projects *agent.ProjectIndex, log *slog.Logger) (*agent.Files, error) {
	fc := agent.FilesConfig{Store: a.Store, Extractor: knowledge.Extractor{}, Publisher: a.Broker,
		MaxFileBytes: cfg.MaxFileBytes, MaxUserBytes: cfg.MaxUserFileBytes, Logger: log,
		Groups: a.Store, Projects: projects,
		// One instance ingests a file at a time (a lock of the file's;
		// on SQLite this process is the only one).
		Claim: func(ctx context.Context, id string) (func(), bool, error) {
			_, release, ok, err := a.Store.TryLead(ctx, "file "+id)
			return release, ok, err
		}}
	if cfg.Demo && cfg.EmbeddingModel == "" {
		cfg.EmbeddingModel = demo.EmbeddingModel // the demo endpoint's deterministic embeddings
	}
	if cfg.EmbeddingModel != "" {
		if providers == nil {
			return nil, fmt.Errorf("AGENTIK_EMBEDDING_MODEL %q: no model endpoint is configured", cfg.EmbeddingModel)
		}
		emb, err := providers.Embedder(cfg.EmbeddingModel)
		if err != nil {
			return nil, fmt.Errorf("AGENTIK_EMBEDDING_MODEL: %w", err)
		}
		fc.Embedder = emb
	}
	return agent.NewFiles(fc)
}
