// Package eventlog is the store's engine (DESIGN §12.0): the mechanics of
// keeping the event log fast, behind internal/store, which alone imports it
// (internal/arch's TestEngineBehindTheStore) and keeps the meaning of the
// records.
//
// It holds the delta log (DeltaLog: text deltas committed beside the
// database instead of in a SQLite transaction, deltalog.go), the run
// indexes (runindex.go: a key's seqs as runs in a table of their own, the
// writer's deferred entries, watermarks and the repair at open), ordered
// publication (Publisher, publish.go), the PostgreSQL listener (Listener,
// listen.go), the merge of the two logs' reads (merge.go), the retries of
// a transaction (Retry, retry.go), the WAL
// checkpointer beside the writer (Checkpointer, checkpoint.go) and the
// SQLite driver the writer and the replays run on (sqlitedrv). The writer
// and its group commit, and the replay reads by run index, are still in
// internal/store; they move here next. The store names the tables and
// keys; nothing here knows a noun of the store's.
// The delta log, the run indexes and the driver exist only in the
// store's fast mode (docs/store.md).
package eventlog
