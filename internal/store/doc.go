// Package store implements agent.Store with gorm, on SQLite (pure Go,
// github.com/glebarez/sqlite) or PostgreSQL, with the same code for both.
//
// # Tables
//
// conversation (turn state included), message (append-only history, the
// Message JSON in payload, client_id unique per conversation),
// working_memory (ModelMessage JSON by order_idx), agent_event (the log:
// seq, id, conversation_id without foreign key, created_at, type = the
// AllEvent's kind, payload = the AllEvent JSON) and meta (epoch,
// pruned_through). Deleting a conversation cascades to its messages and
// memory; its events stay until pruned.
//
// # The writer
//
// Every write of the log goes through Append, and every Append goes through
// one goroutine, the writer (eventlog.Writer, the group commit). Append puts
// its records on a bounded queue (eventlog.QueueSize; a full queue blocks
// the caller until its ctx ends) and waits for the answer. The writer
// takes everything queued, up to eventlog.MaxBatch
// records, and commits it in ONE transaction (group commit), so a token
// stream costs one fsync per batch rather than one per token. While
// several appenders are active it holds a batch open (at most eventlog.GroupWait,
// 500 µs) until it holds as many requests as the previous batch; a lone
// appender never waits. On SQLite the event rows go in as INSERT OR FAIL
// statements of eventlog.SQLiteInsertChunk rows (no statement journal:
// see eventlog/commit.go). The engine runs the transaction; the store's
// hooks (writer.go) write each record's rows in it:
//
//  1. On PostgreSQL, take the advisory lock seqLock and read the highest
//     seq inside it, so seqs become visible in order across instances. On
//     SQLite the writer is the only writer and keeps the last seq in memory.
//  2. Events repeated within the batch are skipped. Ids stored by earlier
//     transactions are not looked up: the unique index on id rejects them
//     and the batch takes the retry path below (replays are rare, a lookup
//     per batch is not free).
//  3. For each new record in order: seq = last+1, set on the event (and on a
//     message event's Message), then the record's rows: created → insert
//     the conversation, renamed → title, deleted → delete with cascade,
//     message event → insert the message and bump updated_at and
//     message_count, Memory → append to working memory, Turn → running
//     state and turn_seq.
//  4. Insert the batch's agent_event rows: on SQLite one INSERT OR FAIL
//     per 32 rows (a commit at the mix's pace is one statement), on
//     PostgreSQL one INSERT of unnest()ed column arrays, prepared once per
//     connection; on PostgreSQL also pg_notify the batch's highest seq;
//     commit.
//  5. Publish (catchUp, below) the committed events in seq order, then
//     answer every waiting Append.
//
// On SQLite a commit of text deltas alone (and the start of an answer
// that comes with its first delta: isDelta) runs no transaction: the
// writer appends them to the delta log beside the database and every read
// merges the two (deltalog.go).
//
// A transaction that fails with a transient error is run again (retry.go,
// eventlog.Retry).
// If the batch transaction fails, the writer retries each Append alone, each
// in its own transaction that first looks up which event ids are stored:
// such an event is skipped (append is idempotent) and its record gets the
// stored seq. So a replayed event succeeds, and one bad request (a reused
// client_id is bad_request, a conversation that no longer exists is
// not_found) fails only itself and leaves nothing half-written. The in-memory seq moves only on
// commit, so a rolled-back transaction leaves no gap in the seqs.
//
// Close stops new Appends, lets the writer commit what is queued, waits for
// it and closes the databases.
//
// # Modes
//
// On SQLite the speed layer below (the delta log, the run indexes, the
// own driver, the checkpointer, the read cache) is ModeFast, the default;
// ModePlain (AGENTIK_STORE_MODE=plain) runs none of it: one transaction
// per group commit through gorm on glebarez/go-sqlite, reads by ordinary
// indexes of agent_event. Either opens what the other wrote (mode.go, the
// engine's eventlog/mode.go, docs/store.md).
//
// # Several instances (PostgreSQL)
//
// Every instance on one database publishes every event, its own and the
// others', each once and in seq order. The store remembers the highest seq
// it published (head at Open); catchUp, under a mutex, publishes everything
// above it. Two callers:
//
//   - the writer, after each commit: it reads from agent_event the seqs
//     other instances committed between the last published one and its own
//     first, then publishes its own events from memory, so an Append still
//     returns after its events (and everything below them) are published;
//   - the listener goroutine, on its own pgx connection LISTENing on
//     agentik_events_<epoch>: each notification of another instance (the
//     payload is the seq a transaction committed through, the random id
//     of the Store that committed it, and as many of its events as fit:
//     notice) publishes the events it carries, reading from the log only
//     those below them this instance has not published and those that did
//     not fit (above the last published seq). A burst of notifications
//     too large to carry costs one read; the rest find nothing to do. It skips its own Store's
//     notifications, which its writer publishes: reading those back would
//     cost a query for a third of the commits (measured) and slow the
//     writer, which waits for the mutex.
//
// Reading beyond a notified seq is safe because the advisory lock makes
// seqs visible in order: any read sees a prefix of the log. The events a
// notification carries are the commit's stored bytes, contiguous, and are
// published as the log's (only sessions that know the epoch name the
// channel); a malformed payload, a lost notification, or one for events
// this instance already published costs at most a read. On a lost connection the listener logs,
// reconnects with backoff (eventlog.ListenBackoffMin to ListenBackoffMax), LISTENs
// again, then catches up from the last published seq; after eventlog.ListenIdle
// without a notification it pings its connection and catches up anyway.
// The channel carries the epoch because NOTIFY is per database, not per
// schema. On SQLite the writer's own events are always next in seq, so
// catchUp never reads and no listener runs.
//
// # Search
//
// search_doc holds one row per conversation title and per user or
// assistant message with text, written in the transaction of the record
// that makes it (indexRecord) and deleted with its conversation by the
// foreign key's cascade. On SQLite two FTS5 tables over it (search_title,
// search_body), kept in step by triggers, answer MATCH (search_body just
// after the commit, through a mark: searchlater.go); on PostgreSQL a
// generated tsvector column with a GIN index answers @@. See search.go.
//
// # SQLite
//
// The DSN carries the pragmas of DESIGN.md §4 (busy_timeout first, WAL,
// foreign_keys, synchronous NORMAL, _txlock=immediate; never _time_format).
// Writes use their own *gorm.DB with a single connection; reads use a
// separate pool opened query_only. Times are stored in UTC with microsecond
// precision, so the driver's text format sorts in time order.
package store
