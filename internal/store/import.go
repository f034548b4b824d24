package store

import (
	"context"
	"fmt"

	"github.com/agentik/agentik/internal/agent"
)

var _ agent.Sources = (*Store)(nil)

// ImportedFrom maps each of sources that a stored conversation was
// imported from to that conversation's id (a deleted conversation is gone,
// so importing its source again creates it again).
func (s *Store) ImportedFrom(ctx context.Context, sources []string) (map[string]string, error) {
	out := make(map[string]string, len(sources))
	for len(sources) > 0 {
		chunk := sources[:min(idChunk, len(sources))]
		sources = sources[len(chunk):]
		var rows []conversationRow
		if err := s.r.WithContext(ctx).Select("id", "source").Where("source IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("store: imported from: %w", err)
		}
		for _, r := range rows {
			out[*r.Source] = r.ID
		}
	}
	return out, nil
}
