package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

var (
	_ agent.Store     = (*Store)(nil)
	_ agent.Cluster   = (*Store)(nil)
	_ agent.Versioned = (*Store)(nil)
)

// sqlitePragmas are the connection parameters of every SQLite connection, in
// the order DESIGN.md §4 gives: busy_timeout first so that the pragmas after
// it already wait for a lock instead of failing. `_time_format` is never
// set: the driver ignores `_txlock` when it is.
const sqlitePragmas = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"

// sqliteCache is every SQLite connection's page cache bound (cache_size, in
// KiB when negative): 256 KiB against SQLite's default of 2000. modernc's
// SQLite keeps all the process's page caches in one LRU group bounded by
// the sum of its connections' shares, each 4 KiB page in an 8 KiB slot: at
// the default, 14 connections' ~56 MiB, which the writer (its cache is
// never dropped for another's commit) was still filling at the end of the
// soak's 20 minutes, the growth outside Go (docs/store.md, "The page
// caches"). A reader's cache is dropped whenever the WAL moved since its
// last read (SQLite's pager), and its reads come from the mmap. Measured in session 11: the soak's SQLite heap level
// from its first minute (+3.5 % in all over 10 minutes, against +10.9 %
// over 20), the mix and the reconnect storm unchanged (five alternated runs
// each). A DSN's own _pragma=cache_size(…) comes after it and wins.
const sqliteCache = "&_pragma=cache_size(-256)"

// readPoolSize caps the SQLite read pool. WAL lets readers run beside the
// one writer; a few connections are plenty for a 2–8 core machine.
const readPoolSize = 8

// postgresPoolSize caps the PostgreSQL pool shared by reads and the writer.
const postgresPoolSize = 16

// Options configures Open.
type Options struct {
	// Publish receives every committed event of the database exactly
	// once, in seq order across calls, and never a lower seq after a higher
	// one. The writer calls it after each commit, before the Appends it
	// committed return (with, on PostgreSQL, the events other instances
	// committed below them first); on PostgreSQL the listener goroutine
	// also calls it with other instances' events, at any time from within
	// Open (before Open returns) until Close returns: whatever it calls
	// must be ready before Open is called. Calls never overlap. It must not
	// block (agent.Publisher.Publish never does). May be nil: then no
	// listener runs.
	Publish func(evs []agent.Encoded)
	// Interrupt is called, on PostgreSQL, when another instance asks this
	// one to interrupt the turn it runs in a conversation (see
	// RequestInterrupt). It is called from the listener goroutine and must
	// not block. May be nil.
	Interrupt func(conversationID string)
	// Now is the clock for created_at/updated_at and gorm's NowFunc;
	// time.Now when nil.
	Now agent.Clock
	// Logger receives slow-query and error logs from gorm; discarded when nil.
	Logger *slog.Logger
	// PageBytes bounds the stored JSON of one page of Events (a query with
	// a Limit): a page ends after the event that reaches it, so it holds at
	// least one event. Default PageBytes.
	PageBytes int
	// RetryBackoff is the wait before the writer runs a transaction again
	// that failed with a transient error (a killed connection, a restarting
	// PostgreSQL, a serialization failure); it doubles on each of the
	// eventlog.RetryAttempts. Default RetryBackoff.
	RetryBackoff time.Duration
	// Relay, EXPERIMENTAL (relay.go): on PostgreSQL, the address of an
	// event relay (ServeRelay) that carries committed events between the
	// instances, so they are published without a read of the log. ""
	// (the default): LISTEN/NOTIFY and a catch-up read, as documented.
	Relay string

	// Mode is how the engine keeps the log on SQLite (mode.go): ModeFast
	// (the speed layer) or ModePlain. "" takes AGENTIK_STORE_MODE from the
	// environment, else ModeFast. PostgreSQL has one path for both.
	Mode Mode

	// glebarezWriter puts the SQLite writer on glebarez/go-sqlite, as the
	// reads are, instead of sqlitedrv: for benchmarks comparing the two.
	glebarezWriter bool
	// gormReplay reads a conversation's events through gorm on the read
	// pool, as before the event pool (eventscan.go): for benchmarks.
	gormReplay bool
}

// PageBytes is the default byte bound of a page of Events: a replay of
// large events (images, long answers) holds a few of them at a time, not
// a thousand.
const PageBytes = 4 << 20

// Store is agent.Store over gorm, on SQLite or PostgreSQL. All writes go
// through one writer goroutine that group-commits them (see doc.go).
type Store struct {
	w         *gorm.DB             // writer: one connection on SQLite
	r         *gorm.DB             // reads: a pool (the same pool as w on PostgreSQL)
	rdb       *sql.DB              // r's pool, for the reads written as SQL (rawsql.go)
	ev        *eventlog.ReplayPool // SQLite, fast mode only: a conversation's events (eventscan.go)
	postgres  bool
	plain     bool          // SQLite in ModePlain: none of the speed layer (mode.go)
	pageB     int           // Options.PageBytes
	retryWait time.Duration // Options.RetryBackoff
	lock      *fileLock     // SQLite only: the locks held while open (lock.go)
	epoch     string
	now       func() time.Time
	publish   func([]agent.Encoded)
	onIntr    func(conversationID string)
	onHand    atomic.Pointer[func()]                // see OnHandover
	onProject atomic.Pointer[func(string)]          // see OnProject (project.go)
	onTold    sync.Map                              // topic → func(string): see OnBroadcast
	onSite    atomic.Pointer[func()]                // see OnSite (site.go)
	onOwn     atomic.Pointer[func([]agent.Encoded)] // see OnOwnCommit (notify.go)
	log       *slog.Logger

	ctx context.Context // writer's context: Open's values, never cancelled
	// wr is the group commit: the writer goroutine and its queue
	// (eventlog.Writer); a temp database runs no goroutine and commits
	// on the Append's own, under wr.Hold.
	wr *eventlog.Writer[*agent.Record]

	version atomic.Uint64 // see Version
	cache   readCache     // reads kept until the next commit (SQLite only)

	pub *eventlog.Publisher // ordered publication (see catchUp)
	// logReads counts the publisher's reads of the log (stored): a
	// notification that carries its commit's events needs none.
	logReads atomic.Int64

	// PostgreSQL only, when publish is set: the listener (see notify.go).
	dsn        string
	channel    string             // NOTIFY channel, named after the epoch
	seqLock    int64              // advisory lock of appends (PostgreSQL), named after the epoch
	instance   string             // random id of this Store in its notices
	stopListen context.CancelFunc // ends the listener's context
	listen     *eventlog.Listener // PostgreSQL, once started (notify.go)
	listenDone chan struct{}      // closed when the listener has returned
	listenPID  atomic.Uint32      // backend pid of the listener's connection (tests)

	// EXPERIMENTAL, with Options.Relay (relay.go).
	relay     *relayClient
	lateMu    sync.Mutex
	lateSeq   int64 // the highest notified seq a check waits for
	lateArmed bool
	lateWG    sync.WaitGroup // pending checks (the listener waits for them)

	ckpt *eventlog.Checkpointer // SQLite, both modes (eventlog/checkpoint.go)

	bodies *bodyIndex // SQLite: message texts indexed after their commit (searchlater.go)

	convIx  *eventlog.RunIndex // SQLite only: the deferred conversation index entries (convindex.go)
	ownerIx *eventlog.RunIndex // SQLite only: the same of the owner index

	temp *tempState // a temp database's (OpenTemp); nil: a stored one

	vectors vecCache // knowledge's chunk vectors, decoded (file.go), and lexemes (terms.go)
	// termRanked counts the keyword searches ranked from the cache's
	// lexemes (terms.go; tests).
	termRanked atomic.Int64

	// SQLite only: text deltas committed outside SQLite (deltalog.go), and
	// the highest seq committed to either (the horizon of merged reads).
	side    *eventlog.DeltaLog
	path    string // the database file's
	durable atomic.Int64

	// Owned by the writer goroutine.
	owners owners // conversation owners the writer looked up (owner.go)
	// ownersTx: owners the transaction being applied learnt, kept only
	// when it commits (owner.go)
	ownersTx   owners
	sideRoom   sideRoom // commitSide's, reused
	sideRedact []int64  // delta log records a delete in the current transaction redacts once it commits
	tx         txState  // the transaction being applied (writer.go)
}

// Open opens (creating if needed) the database named by dsn and starts the
// writer. dsn is "sqlite:path", a bare file path, or a "postgres://" /
// "postgresql://" URL. ctx bounds opening and migration; its values (not its
// cancellation) are kept for the writer's statements.
func Open(ctx context.Context, dsn string, opt Options) (*Store, error) {
	s := &Store{
		log:   opt.Logger,
		pageB: opt.PageBytes,
		ctx:   context.WithoutCancel(ctx),
	}
	clock := opt.Now
	if clock == nil {
		clock = time.Now
	}
	// Microseconds: what PostgreSQL keeps, so a value reads back as written
	// on both databases. UTC: SQLite compares the stored text.
	s.now = func() time.Time { return clock().UTC().Truncate(time.Microsecond) }
	if s.pageB <= 0 {
		s.pageB = PageBytes
	}
	if s.retryWait = opt.RetryBackoff; s.retryWait <= 0 {
		s.retryWait = RetryBackoff
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opt.Relay != "" {
		s.relay = &relayClient{addr: opt.Relay, out: make(chan []byte, relayQueue)}
	}
	cfg := func() *gorm.Config {
		return &gorm.Config{
			TranslateError:         true,
			SkipDefaultTransaction: true,
			NowFunc:                s.now,
			Logger:                 gormLog{s.log},
		}
	}

	mode, err := modeOf(opt.Mode)
	if err != nil {
		return nil, err
	}
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		s.postgres = true
		s.cache.off = true
		if s.w, err = gorm.Open(postgres.Open(dsn), cfg()); err != nil {
			return nil, fmt.Errorf("store: open postgres: %w", err)
		}
		s.r = s.w
		sqlDB, err := s.w.DB()
		if err != nil {
			return nil, fmt.Errorf("store: open postgres: %w", err)
		}
		sqlDB.SetMaxOpenConns(postgresPoolSize)
		sqlDB.SetMaxIdleConns(postgresPoolSize)
		s.rdb = sqlDB
	default:
		path, extra, err := sqlitePath(dsn)
		if err != nil {
			return nil, err
		}
		if s.lock, err = lockDatabase(path); err != nil {
			return nil, err
		}
		s.path = path
		s.plain = mode == ModePlain
		s.bodies = newBodyIndex()
		// A file: URI: '%' and '#' in the path must be escaped.
		base := "file:" + strings.NewReplacer("%", "%25", "#", "%23").Replace(path) + "?" + sqlitePragmas + sqliteCache + extra
		// The writer never checkpoints: the checkpointer does, beside it,
		// in both modes. With SQLite's own checkpoints (inside the commit
		// that grows the WAL past 1000 pages) plain mode's token p99 was
		// its checkpoints: one run's 2,333 transactions had p99 28 ms and
		// a 167 ms worst (docs/BENCHMARKS.md, the mix's turn starts).
		wdsn := base + "&_pragma=wal_autocheckpoint(0)"
		if s.plain {
			s.cache.off = true
		}
		if s.w, err = eventlog.OpenSQLiteWriter(wdsn, cfg(), opt.glebarezWriter || s.plain); err != nil {
			_ = s.lock.Close()
			return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
		}
		wDB, err := s.w.DB()
		if err != nil {
			_ = s.lock.Close()
			return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
		}
		wDB.SetMaxOpenConns(1)
		wDB.SetMaxIdleConns(1)
		wDB.SetConnMaxIdleTime(0)
		wDB.SetConnMaxLifetime(0)
		// Reads never write: query_only turns a mistake into an error.
		if s.r, err = gorm.Open(sqlite.Open(base+"&_pragma=query_only(1)&_pragma=mmap_size(1073741824)"), cfg()); err != nil {
			_ = wDB.Close()
			_ = s.lock.Close()
			return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
		}
		rDB, err := s.r.DB()
		if err != nil {
			_ = wDB.Close()
			_ = s.lock.Close()
			return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
		}
		rDB.SetMaxOpenConns(readPoolSize)
		rDB.SetMaxIdleConns(readPoolSize)
		s.rdb = rDB
		if !opt.gormReplay && !s.plain {
			if s.ev, err = eventlog.OpenReplayPool(base + "&_pragma=query_only(1)&_pragma=mmap_size(1073741824)"); err != nil {
				_ = wDB.Close()
				_ = rDB.Close()
				_ = s.lock.Close()
				return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
			}
		}
		cDB, err := sql.Open("sqlite", base)
		if err != nil {
			_ = wDB.Close()
			_ = rDB.Close()
			if s.ev != nil {
				_ = s.ev.Close()
			}
			_ = s.lock.Close()
			return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
		}
		cDB.SetMaxOpenConns(1)
		s.ckpt = eventlog.NewCheckpointer(cDB, wDB)
	}

	if err := checkTextOnWrite(s.w); err != nil { // text.go
		_ = s.closeDBs()
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := s.init(ctx); err != nil {
		_ = s.closeDBs()
		return nil, err
	}
	if err := s.openBodies(ctx); err != nil { // searchlater.go
		_ = s.closeDBs()
		return nil, err
	}
	s.dsn = dsn
	s.wr.Start()
	if opt.Publish != nil {
		if err := s.Start(ctx, opt.Publish, opt.Interrupt); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Start connects the store to what it feeds: publish receives every
// committed event (as Options.Publish says), interrupt the requests of
// other instances to stop a turn this one runs (as Options.Interrupt says).
// It is the explicit second step of wiring, once the broker and the runner
// exist; until it is called nothing is published (subscribers replay what
// they missed from the log). Open calls it when Options.Publish is set.
// On PostgreSQL it starts listening: once it has returned, no other
// instance's commit can be missed.
func (s *Store) Start(ctx context.Context, publish func([]agent.Encoded), interrupt func(conversationID string)) error {
	if started := s.pub.Started(); started || publish != nil && !s.pub.Start(publish) {
		return errors.New("store: started twice")
	}
	s.onIntr = interrupt
	if !s.postgres || publish == nil {
		return nil
	}
	s.listen = s.newListener()
	conn, err := s.listen.Dial(ctx)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	var lctx context.Context
	lctx, s.stopListen = context.WithCancel(s.ctx)
	s.listenDone = make(chan struct{})
	go s.listener(lctx, conn)
	return nil
}

// sqlitePath splits "sqlite:path?query" (or a bare path) into the file path
// and extra query parameters ("&…", appended after ours).
func sqlitePath(dsn string) (path, extra string, err error) {
	if scheme, _, ok := strings.Cut(dsn, "://"); ok && scheme != "sqlite" && scheme != "file" && !strings.ContainsAny(scheme, `/\.`) {
		return "", "", fmt.Errorf("store: unsupported database URL scheme %q: use sqlite:PATH or postgres://URL", scheme)
	}
	path = strings.TrimPrefix(dsn, "sqlite:")
	path = strings.TrimPrefix(path, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path, extra = path[:i], "&"+path[i+1:]
	}
	if path == "" || path == ":memory:" {
		return "", "", fmt.Errorf("store: sqlite needs a file path, got %q", dsn)
	}
	if strings.Contains(extra, "_time_format") {
		return "", "", fmt.Errorf("store: sqlite dsn %q: _time_format is not allowed (the driver then ignores _txlock)", dsn)
	}
	return path, extra, nil
}

// droppedEventIndex is the index agent_event.created_at had until Prune and
// CursorAt stopped needing it.
const droppedEventIndex = "idx_agent_event_created_at"

// init migrates the schema, makes or reads the epoch and loads the seq.
func (s *Store) init(ctx context.Context) error {
	db := s.w.WithContext(ctx)
	var convMark, ownerMark int64 // the conversation and owner indexes' watermarks, as the migration left them (SQLite)
	var fold *eventlog.DeltaLog   // plain mode: a delta log the fast mode left, folded in below (eventlog/mode.go)
	if !s.postgres {
		// Before the migration: recovering the indexes reads it.
		var epoch []string
		if db.Migrator().HasTable(&metaRow{}) {
			if err := db.Raw("SELECT value FROM meta WHERE key = ?", metaEpoch).Scan(&epoch).Error; err != nil {
				return fmt.Errorf("store: epoch: %w", err)
			}
		}
		var err error
		if s.plain {
			fold, err = eventlog.LeftDeltaLog(s.path, strings.Join(epoch, ""), s.log, redactedPayload)
		} else {
			s.side, err = eventlog.OpenDeltaLog(s.path, strings.Join(epoch, ""), s.log, redactedPayload)
		}
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	tables := func(tx *gorm.DB) error {
		// The tables as the row structs say. A database whose stored
		// print matches the structs' skips gorm's inspection of every
		// table (schema.go).
		sp, err := schemaPrint(tx, s.postgres)
		if err != nil {
			return err
		}
		if !sp.same {
			for _, group := range migratedTables {
				if err := tx.AutoMigrate(group...); err != nil {
					return err
				}
			}
		}
		if err := migrateFiles(tx, s.postgres); err != nil { // file.go
			return err
		}
		// Databases made before created_at lost its index (Prune) keep it
		// until here: it cost every token's row a B-tree insert.
		if err := tx.Exec("DROP INDEX IF EXISTS " + droppedEventIndex).Error; err != nil {
			return err
		}
		if s.plain {
			if err := eventlog.MigratePlain(tx, plainIndexes...); err != nil { // mode.go
				return err
			}
		} else {
			mark, err := migrateConvIndex(tx, s.postgres, s.side) // convindex.go
			if err != nil {
				return err
			}
			convMark = mark
			if ownerMark, err = migrateOwnerIndex(tx, s.postgres, s.side); err != nil { // convindex.go
				return err
			}
			if !s.postgres {
				if err := eventlog.DropPlain(tx, plainIndexes...); err != nil { // mode.go: the run indexes hold every event now
					return err
				}
			}
		}
		side := s.side
		if s.plain {
			side = fold // the owners it folds in are repaired too
		}
		if ownerMark, err = repairOwners(tx, s.postgres, s.plain, side, ownerMark); err != nil { // owner.go
			return err
		}
		if err := initUsers(tx, s.now()); err != nil {
			return err
		}
		if err := migrateSearch(tx, s.postgres); err != nil {
			return err
		}
		return sp.save(tx)
	}
	migrate := tables
	if s.postgres {
		// Instances starting together would race creating the same tables
		// and indexes; PostgreSQL DDL is transactional, so migrate under a
		// transaction-scoped advisory lock.
		migrate = func(db *gorm.DB) error {
			return db.Transaction(func(tx *gorm.DB) error {
				var schema string
				if err := tx.Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
					return err
				}
				if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrateLock(schema)).Error; err != nil {
					return err
				}
				return tables(tx)
			})
		}
	}
	if err := migrate(db); err != nil {
		if fold != nil {
			_ = fold.Close()
		}
		return fmt.Errorf("store: migrate: %w", err)
	}
	if fold != nil {
		if err := eventlog.FoldDeltaLog(db, &eventTable, fold, storedConversations(db)); err != nil { // mode.go
			return fmt.Errorf("store: %w", err)
		}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).
		Create(&metaRow{Key: metaEpoch, Value: hex.EncodeToString(b[:])}).Error; err != nil {
		return fmt.Errorf("store: epoch: %w", err)
	}
	var m metaRow
	if err := db.Take(&m, "key = ?", metaEpoch).Error; err != nil {
		return fmt.Errorf("store: epoch: %w", err)
	}
	s.epoch = m.Value
	s.channel = notifyChannel(s.epoch)
	s.seqLock = seqLock(s.epoch)
	_, _ = rand.Read(b[:8])
	s.instance = hex.EncodeToString(b[:8])
	seq, err := s.headSeq(db)
	if err != nil {
		return fmt.Errorf("store: read seq: %w", err)
	}
	s.pub = eventlog.NewPublisher(seq, s.stored) // notify.go
	s.durable.Store(seq)
	s.wr = eventlog.NewWriter(s.writerHooks()) // started by Open
	s.wr.Configure(s.writerConfig(seq))
	if !s.postgres && !s.plain {
		s.side.SetEpoch(s.epoch)
		pruned, _, err := bounds(db)
		if err != nil {
			return fmt.Errorf("store: read seq: %w", err)
		}
		if err := s.side.Prune(pruned); err != nil { // a Prune that stopped between the two
			s.log.Error("delta_log_prune", "err", err)
		}
		if err := s.side.RedactOrphans(storedConversations(db)); err != nil {
			return err
		}
		s.convIx = eventlog.NewRunIndex(convRuns.Runs, convMark)
		s.ownerIx = eventlog.NewRunIndex(ownerRuns.Runs, ownerMark)
	}
	return nil
}

// Close stops accepting appends, lets the writer commit everything already
// queued, waits for it, stops the listener and waits for it, and closes the
// databases. Publish is not called once Close has returned.
func (s *Store) Close() error {
	if !s.wr.Close() {
		return nil
	}
	if s.stopListen != nil {
		s.stopListen()
		<-s.listenDone
	}
	return s.closeDBs()
}

func (s *Store) closeDBs() error {
	var errs []error
	if s.side != nil {
		errs = append(errs, s.side.Close())
	}
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.Close())
	}
	if s.ev != nil {
		errs = append(errs, s.ev.Close())
	}
	dbs := []*gorm.DB{s.w}
	if s.r != s.w {
		dbs = append(dbs, s.r)
	}
	for _, db := range dbs {
		if db == nil {
			continue
		}
		sqlDB, err := db.DB()
		if err == nil {
			err = sqlDB.Close()
		}
		errs = append(errs, err)
	}
	if s.lock != nil {
		// After the connections: the next process may open the file now.
		errs = append(errs, s.lock.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Version implements agent.Versioned. It moves with every commit of this
// Store's writer, after the commit and before the Appends it committed
// return, and, on PostgreSQL, with every notification of another
// instance's commit (so another instance's change shows in a cached read
// as soon as it shows in this instance's event streams).
func (s *Store) Version() uint64 { return s.version.Load() }

// Epoch identifies this database: a random id made when it was created.
func (s *Store) Epoch() string { return s.epoch }

// Ping checks that the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.WithContext(ctx).Raw("SELECT 1").Scan(&one).Error; err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// notFound translates gorm's not-found into agent.ErrNotFound naming what.
func notFound(err error, what string, id string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return agent.Errorf(agent.CodeNotFound, "%s %q not found", what, shortID(id))
	}
	return err
}
