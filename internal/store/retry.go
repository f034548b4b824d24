package store

import (
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// RetryBackoff is the default wait before the writer's first retry of a
// transaction that failed with a transient error (eventlog.Transient); it
// doubles on each further retry, eventlog.RetryAttempts attempts in all.
const RetryBackoff = 50 * time.Millisecond

// applyRetry is apply, run again (checked, after a backoff) while it fails
// with a transient error (eventlog.Retry).
func (s *Store) applyRetry(batch []*request, checked bool) ([]agent.Encoded, error) {
	return eventlog.Retry(s.retryWait, s.log, func(again bool) ([]agent.Encoded, error) {
		return s.apply(batch, checked || again)
	})
}
