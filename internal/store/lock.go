package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrInUse is returned by Open when another process has the SQLite
// database open. Several instances on one database need PostgreSQL: a
// second process on the same SQLite file would end the first one's turns
// as interrupted by a restart and then fight it for the writer lock.
var ErrInUse = errors.New("the database is in use by another process")

// lockPath is the lock file beside a SQLite database file.
func lockPath(db string) string { return db + ".lock" }

// fileLock is what lockDatabase holds: the lock file (with the pid) and
// the database file itself, each under an exclusive flock.
type fileLock struct{ pid, db *os.File }

// Close drops both locks.
func (l *fileLock) Close() error { return errors.Join(l.db.Close(), l.pid.Close()) }

// realPath is db with its symlinks resolved (its directory's, when the
// file does not exist yet), so every path to one file names one lock file.
func realPath(db string) string {
	if p, err := filepath.EvalSymlinks(db); err == nil {
		return p
	}
	if d, err := filepath.EvalSymlinks(filepath.Dir(db)); err == nil {
		return filepath.Join(d, filepath.Base(db))
	}
	return db
}

// lockDatabase takes the exclusive lock of the SQLite database at db: a
// lock file beside the file its path resolves to, holding this process's
// pid for the message a second process gets, and a lock on the database
// file itself, which every path to it (a symlink, a hard link) meets.
// The locks last until the returned lock is closed (or the process ends:
// the kernel drops them, so a crash leaves no stale lock behind).
func lockDatabase(db string) (*fileLock, error) {
	dir := filepath.Dir(db)
	if st, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("store: sqlite %s: the directory %s does not exist; create it first", db, dir)
		}
		return nil, fmt.Errorf("store: sqlite %s: %w", db, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("store: sqlite %s: %s is not a directory", db, dir)
	}
	real := realPath(db)
	f, err := os.OpenFile(lockPath(real), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: sqlite %s: lock file: %w", db, err)
	}
	inUse := func(by string) error {
		return fmt.Errorf("store: sqlite %s is in use by %s (lock %s); run one agentik per SQLite file, or use PostgreSQL for several instances: %w",
			db, by, lockPath(real), ErrInUse)
	}
	if err := tryLock(f); err != nil {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		_ = f.Close()
		if !errors.Is(err, errLocked) {
			return nil, fmt.Errorf("store: sqlite %s: lock %s: %w", db, lockPath(real), err)
		}
		by := "another process"
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b[:n]))); perr == nil && pid > 0 {
			by = fmt.Sprintf("process %d", pid)
		}
		return nil, inUse(by)
	}
	d, err := os.OpenFile(real, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		d, err = os.Open(real) // a read-only file: SQLite says what it thinks of that
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("store: sqlite %s: %w", db, err)
	}
	if err := tryLock(d); err != nil {
		_, _ = d.Close(), f.Close()
		if errors.Is(err, errLocked) {
			return nil, inUse("another process (through another path to the same file)")
		}
		return nil, fmt.Errorf("store: sqlite %s: lock: %w", db, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &fileLock{pid: f, db: d}, nil
}
