// Package eventlog is the store's engine (DESIGN §12.0): the mechanics of
// keeping the event log fast, behind internal/store, which alone imports it
// (internal/arch's TestEngineBehindTheStore) and keeps the meaning of the
// records.
//
// It holds, so far, the delta log (DeltaLog: text deltas committed beside
// the database instead of in a SQLite transaction, deltalog.go), the run
// indexes (runindex.go), the WAL checkpointer beside the writer
// (Checkpointer, checkpoint.go) and the SQLite driver the writer and the
// replays run on (sqlitedrv). The writer and its group commit and the
// replay reader are still in internal/store; they move here one at a time.
// Both exist only in the store's fast mode (docs/store.md).
package eventlog
