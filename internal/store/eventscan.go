package store

import (
	"context"
	"fmt"

	"github.com/agentik/agentik/internal/agent"
)

// The replay of one conversation runs on SQLite on the engine's replay
// pool (eventlog.ReplayPool: sqlitedrv, the payloads copied into shared
// chunks); here is what the store makes of each row. The id is read from
// the payload as a view of those bytes, and the inner type of the common
// events is a constant (agent.StoredEvent): an event of a replayed page
// costs no allocation of its own. BenchmarkEncodedReplayPage measures it
// against the gorm path (Options.gormReplay).

// scanPayloads is scanEvents for a query of one conversation (known.both:
// it selects seq, payload), on the replay pool.
func (s *Store) scanPayloads(ctx context.Context, known eventKnown, size, maxBytes int, query string, args ...any) ([]agent.Encoded, error) {
	out := make([]agent.Encoded, 0, size)
	err := s.ev.Payloads(ctx, maxBytes, query, args, func(seq int64, raw []byte) error {
		id, err := payloadID(raw)
		if err != nil {
			return fmt.Errorf("seq %d: %w", seq, err)
		}
		e := agent.StoredEvent(seq, id, known.kind, known.conversationID, raw)
		e.Owner = known.owner
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// indexSeqs is runSeqs on the replay pool where there is one: a replay's
// page reads its rows of the index without a copy of each.
func (s *Store) indexSeqs(ctx context.Context, k *runIndex, id string, after int64, want int) (seqs []int64, more bool, err error) {
	if s.ev == nil {
		return runSeqs(s.r.WithContext(ctx), k, id, after, want)
	}
	return s.ev.RunSeqs(ctx, k.Runs, id, after, want)
}
