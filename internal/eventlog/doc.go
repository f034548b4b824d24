// Package eventlog is the store's engine (DESIGN §12.0): the mechanics of
// keeping the event log fast, behind internal/store, which alone imports it
// (internal/arch's TestEngineBehindTheStore) and keeps the meaning of the
// records.
//
// It holds the writer (Writer: the group commit, writer.go, and its
// transaction, commit.go: seqs, PostgreSQL's seq lock and notification,
// the events table's INSERT, the look-up of stored ids, the split of a
// failed batch, the retries and a commit's publication; the store gives
// it the events table's name and columns (Table) and Hooks that write
// each record's rows in the same transaction), the delta log (DeltaLog:
// text deltas committed beside the database instead of in a SQLite
// transaction, deltalog.go), the run indexes (runindex.go: a key's seqs as
// runs in a table of their own, the writer's deferred entries, watermarks
// and the repair at open), ordered publication (Publisher, publish.go),
// the PostgreSQL listener (Listener, listen.go), the merge of the two
// logs' reads (merge.go), the retries of a transaction (Retry, retry.go),
// the WAL checkpointer beside the writer (Checkpointer, checkpoint.go),
// the replay pool (ReplayPool, replay.go) and the SQLite driver the
// writer and the replays run on (sqlitedrv, opened by sqlitew.go). The
// writer commits text deltas to the delta log (CommitDeltas,
// deltacommit.go) when the store's Hooks.Side says they need no
// transaction. Prune (prune.go) deletes the log's oldest prefix, and
// ReadByIndex (indexread.go) reads a key's events by its run index.
// The switch between the store's modes is here too (mode.go: plain mode's
// ordinary indexes, PlainIndex, made by MigratePlain and dropped by
// DropPlain, and FoldDeltaLog, which writes a delta log fast mode left
// into the events table), and so is the walk of a redaction (Redact,
// redact.go: a key's events by its seqs, in the caller's transaction,
// each payload rewritten by the store's callback). The store names the
// tables and keys; nothing here knows a noun of the store's.
// The delta log, the run indexes and the driver exist only in the
// store's fast mode (docs/store.md).
package eventlog
