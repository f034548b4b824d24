package store

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// BenchmarkCommitLifecycleMemory is BenchmarkCommitLifecycle on the
// store's own code over a private in-memory SQLite database on one
// sqlitedrv connection that the writer and the reads share (the shape a
// store of temp conversations would have, issue 24 item 5), with the
// store's full schema and its event rows still written: what the store's
// code costs a stateless request once the WAL is gone. cpu-µs/op is the
// process CPU per request.
func BenchmarkCommitLifecycleMemory(b *testing.B) {
	benchCommitLifecycle(b, memoryStore(b))
}

// memoryStore opens a Store as Open does for SQLite, on an in-memory
// database: no lock, no checkpointer, no event pool, reads on the writer's
// connection. For benchmarks only.
func memoryStore(b *testing.B) *Store {
	b.Helper()
	ctx := context.Background()
	s := &Store{
		log:       slog.New(slog.DiscardHandler),
		pageB:     PageBytes,
		retryWait: RetryBackoff,
		ctx:       ctx,
		now:       func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
		publish:   func([]agent.Encoded) {},
	}
	w, err := eventlog.OpenSQLiteWriter("file:"+newID()+"?mode=memory&_pragma=foreign_keys(1)&_txlock=immediate", &gorm.Config{TranslateError: true, SkipDefaultTransaction: true, NowFunc: s.now, Logger: gormLog{s.log}}, false)
	if err != nil {
		b.Fatal(err)
	}
	db, err := w.DB()
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	s.w, s.r, s.rdb = w, w, db
	if err := s.init(ctx); err != nil {
		b.Fatal(err)
	}
	s.wr.Start()
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	return s
}
