package server

import (
	"context"

	"github.com/agentik/agentik/internal/protocol"
)

// opListModels lists the models conversations may pick and the default.
var opListModels = declare(protocol.OpListModels, 0, func(_ context.Context, s *Server, _ struct{}) (any, error) {
	ms, def := s.runner.Models()
	return protocol.ModelsResult{Models: ms, Default: def}, nil
})
