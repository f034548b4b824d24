package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/agentik/agentik/internal/testwait"
)

// TestSecondOpenRefused: a second Store on the same SQLite file refuses to
// open, naming the file and the pid that holds it, until the first closes.
func TestSecondOpenRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentik.db")
	first, err := Open(ctx, "sqlite:"+path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Open(ctx, path, Options{})
	if err == nil {
		second.Close()
		first.Close()
		t.Fatal("a second open of the same SQLite file succeeded")
	}
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
		t.Errorf("error = %v; want ErrInUse naming %s and pid %d", err, path, os.Getpid())
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("open after the first closed: %v", err)
	}
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenMissingDirectory says which directory is missing, not what
// SQLite says ("out of memory (14)").
func TestOpenMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nope")
	_, err := Open(context.Background(), "sqlite:"+filepath.Join(dir, "agentik.db"), Options{})
	if err == nil || !strings.Contains(err.Error(), "directory "+dir+" does not exist") {
		t.Fatalf("error = %v", err)
	}
}

// TestOpenUnknownScheme: a URL of another database is not taken as a
// file name.
func TestOpenUnknownScheme(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, err := Open(context.Background(), "mysql://root@127.0.0.1/agentik", Options{})
	if err == nil || !strings.Contains(err.Error(), `unsupported database URL scheme "mysql"`) {
		t.Fatalf("error = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files made: %v", ents)
	}
}

// Two stores in two schemas of one PostgreSQL database share no lock: an
// append in one does not wait while the other's seq lock is held, and its
// second instance (same schema) does.
func TestSeqLockIsPerSchema(t *testing.T) {
	t.Parallel()
	dsnA, dsnB := postgresOnly(t), postgresOnly(t)
	a := open(t, dsnA, Options{})
	b := open(t, dsnB, Options{})
	a2 := open(t, dsnA, Options{})
	if a.seqLock != a2.seqLock || a.seqLock == b.seqLock {
		t.Fatalf("seq locks: a %x, a's second instance %x, b %x; want a's shared and b's apart", a.seqLock, a2.seqLock, b.seqLock)
	}
	if migrateLock("t_a") == migrateLock("t_b") {
		t.Fatal("two schemas share the migration lock")
	}

	admin, err := gorm.Open(postgres.Open(dsnA), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	adminDB, _ := admin.DB()
	t.Cleanup(func() { _ = adminDB.Close() })
	hold := admin.Begin()
	t.Cleanup(func() { hold.Rollback() })
	if err := hold.Exec("SELECT pg_advisory_xact_lock(?)", a.seqLock).Error; err != nil {
		t.Fatal(err)
	}

	// b appends while a's lock is held.
	ctx, cancel := context.WithTimeout(t.Context(), testwait.Timeout)
	defer cancel()
	if err := b.Append(ctx, createdRec("c1", "")); err != nil {
		t.Fatalf("b's append while a's seq lock is held: %v (want it not to wait on another schema's lock)", err)
	}

	// a's second instance waits for a's lock: its append commits only
	// after the lock is let go.
	done := make(chan error, 1)
	go func() { done <- a2.Append(t.Context(), createdRec("c2", "")) }()
	testwait.For(t, "a's second instance waiting on the seq lock", func() bool {
		var n int64
		admin.Raw("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = ? AND objid = ? AND objsubid = 1",
			uint32(uint64(a.seqLock)>>32), uint32(uint64(a.seqLock))).Scan(&n)
		return n > 0
	})
	select {
	case err := <-done:
		t.Fatalf("a's second instance appended (%v) while a's seq lock was held", err)
	default:
	}
	if err := hold.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a's second instance after the lock: %v", err)
	}
}
