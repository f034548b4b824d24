package llm

import (
	"context"
	"fmt"
	"strings"

	"github.com/sashabaranov/go-openai"

	"github.com/agentik/agentik/internal/agent"
)

// embedder makes embeddings through a provider's /v1/embeddings.
type embedder struct {
	m    *Model
	name string
}

var _ agent.Embedder = embedder{}

// Embed implements agent.Embedder.
func (e embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, e.m.timeout)
	defer cancel()
	resp, err := e.m.client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{Input: texts, Model: openai.EmbeddingModel(e.name)})
	if err != nil {
		return nil, fmt.Errorf("%s", e.m.redact.apply(err.Error()))
	}
	if len(resp.Data) != len(texts) {
		return nil, fmt.Errorf("the endpoint answered %d embeddings for %d texts", len(resp.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(out) {
			return nil, fmt.Errorf("the endpoint answered an embedding of index %d", d.Index)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// Embedder is the embedding model id (AGENTIK_EMBEDDING_MODEL) on its
// provider: "<provider>/<model>", or a model of the default provider.
func (p *Providers) Embedder(id string) (agent.Embedder, error) {
	if pv, name := p.resolve(id); pv != nil {
		return embedder{m: pv.model, name: name}, nil
	}
	def, _ := p.resolve("")
	if def == nil && len(p.provs) == 1 {
		def = p.provs[0]
	}
	if def == nil || strings.TrimSpace(id) == "" {
		return nil, fmt.Errorf("embedding model %q: name it <provider>/<model>; no provider is the default", id)
	}
	return embedder{m: def.model, name: id}, nil
}
