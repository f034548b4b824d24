package store

import (
	"testing"

	"github.com/agentik/agentik/internal/agent/agenttest"
)

// TestStoreContract runs the contract every agent.Store keeps (the one the
// temp conversations' memory store passes too) on each database.
func TestStoreContract(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		rec := &recorder{}
		agenttest.StoreContract(t, open(t, dsn, Options{Publish: rec.publish}), rec.events)
	})
}
