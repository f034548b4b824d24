package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

var _ agent.Store = (*Store)(nil)

// sqlitePragmas are the connection parameters of every SQLite connection, in
// the order DESIGN.md §4 gives: busy_timeout first so that the pragmas after
// it already wait for a lock instead of failing. `_time_format` is never
// set: the driver ignores `_txlock` when it is.
const sqlitePragmas = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"

// readPoolSize caps the SQLite read pool. WAL lets readers run beside the
// one writer; a few connections are plenty for a 2–8 core machine.
const readPoolSize = 8

// postgresPoolSize caps the PostgreSQL pool shared by reads and the writer.
const postgresPoolSize = 16

// Options configures Open.
type Options struct {
	// Publish is called by the writer goroutine after each commit with the
	// committed events in seq order, before the Appends they belong to
	// return. It must not block (agent.Publisher.Publish never does). May be
	// nil.
	Publish func(evs []agent.AllEvent)
	// Now is the clock for created_at/updated_at and gorm's NowFunc;
	// time.Now when nil.
	Now agent.Clock
	// Logger receives slow-query and error logs from gorm; discarded when nil.
	Logger *slog.Logger
}

// Store is agent.Store over gorm, on SQLite or PostgreSQL. All writes go
// through one writer goroutine that group-commits them (see doc.go).
type Store struct {
	w        *gorm.DB // writer: one connection on SQLite
	r        *gorm.DB // reads: a pool (the same pool as w on PostgreSQL)
	postgres bool
	epoch    string
	now      func() time.Time
	publish  func([]agent.AllEvent)
	log      *slog.Logger

	ctx  context.Context // writer's context: Open's values, never cancelled
	reqs chan *request

	mu     sync.RWMutex // guards closed against sends on reqs
	closed bool
	done   chan struct{} // closed when the writer goroutine has returned

	// Owned by the writer goroutine.
	lastSeq int64 // SQLite only: the highest committed seq
	stats   writerStats
}

// Open opens (creating if needed) the database named by dsn and starts the
// writer. dsn is "sqlite:path", a bare file path, or a "postgres://" /
// "postgresql://" URL. ctx bounds opening and migration; its values (not its
// cancellation) are kept for the writer's statements.
func Open(ctx context.Context, dsn string, opt Options) (*Store, error) {
	s := &Store{
		publish: opt.Publish,
		log:     opt.Logger,
		ctx:     context.WithoutCancel(ctx),
		reqs:    make(chan *request, queueSize),
		done:    make(chan struct{}),
	}
	clock := opt.Now
	if clock == nil {
		clock = time.Now
	}
	// Microseconds: what PostgreSQL keeps, so a value reads back as written
	// on both databases. UTC: SQLite compares the stored text.
	s.now = func() time.Time { return clock().UTC().Truncate(time.Microsecond) }
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	cfg := func() *gorm.Config {
		return &gorm.Config{
			TranslateError:         true,
			SkipDefaultTransaction: true,
			NowFunc:                s.now,
			Logger:                 gormLog{s.log},
		}
	}

	var err error
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		s.postgres = true
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
	default:
		path, extra, err := sqlitePath(dsn)
		if err != nil {
			return nil, err
		}
		// A file: URI: '%' and '#' in the path must be escaped.
		base := "file:" + strings.NewReplacer("%", "%25", "#", "%23").Replace(path) + "?" + sqlitePragmas + extra
		if s.w, err = gorm.Open(sqlite.Open(base), cfg()); err != nil {
			return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
		}
		wDB, err := s.w.DB()
		if err != nil {
			return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
		}
		wDB.SetMaxOpenConns(1)
		wDB.SetMaxIdleConns(1)
		wDB.SetConnMaxIdleTime(0)
		wDB.SetConnMaxLifetime(0)
		// Reads never write: query_only turns a mistake into an error.
		if s.r, err = gorm.Open(sqlite.Open(base+"&_pragma=query_only(1)"), cfg()); err != nil {
			_ = wDB.Close()
			return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
		}
		rDB, err := s.r.DB()
		if err != nil {
			_ = wDB.Close()
			return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
		}
		rDB.SetMaxOpenConns(readPoolSize)
		rDB.SetMaxIdleConns(readPoolSize)
	}

	if err := s.init(ctx); err != nil {
		_ = s.closeDBs()
		return nil, err
	}
	go s.writer()
	return s, nil
}

// sqlitePath splits "sqlite:path?query" (or a bare path) into the file path
// and extra query parameters ("&…", appended after ours).
func sqlitePath(dsn string) (path, extra string, err error) {
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

// init migrates the schema, makes or reads the epoch and loads the seq.
func (s *Store) init(ctx context.Context) error {
	db := s.w.WithContext(ctx)
	if err := db.AutoMigrate(&conversationRow{}, &messageRow{}, &memoryRow{}, &eventRow{}, &metaRow{}); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
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
	if !s.postgres {
		seq, err := headSeq(db)
		if err != nil {
			return fmt.Errorf("store: read seq: %w", err)
		}
		s.lastSeq = seq
	}
	return nil
}

// Close stops accepting appends, lets the writer commit everything already
// queued, waits for it and closes the databases.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.reqs)
	s.mu.Unlock()
	<-s.done
	return s.closeDBs()
}

func (s *Store) closeDBs() error {
	var errs []error
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
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

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
		return agent.Errorf(agent.CodeNotFound, "%s %q not found", what, id)
	}
	return err
}
