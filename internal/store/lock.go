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

// lockDatabase takes the exclusive lock beside the SQLite database at db
// and writes this process's pid into it; the lock lasts until the returned
// file is closed (or the process ends: the kernel drops it, so a crash
// leaves no stale lock behind).
func lockDatabase(db string) (*os.File, error) {
	dir := filepath.Dir(db)
	if st, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("store: sqlite %s: the directory %s does not exist; create it first", db, dir)
		}
		return nil, fmt.Errorf("store: sqlite %s: %w", db, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("store: sqlite %s: %s is not a directory", db, dir)
	}
	f, err := os.OpenFile(lockPath(db), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: sqlite %s: lock file: %w", db, err)
	}
	if err := tryLock(f); err != nil {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		_ = f.Close()
		if !errors.Is(err, errLocked) {
			return nil, fmt.Errorf("store: sqlite %s: lock %s: %w", db, lockPath(db), err)
		}
		by := "another process"
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b[:n]))); perr == nil && pid > 0 {
			by = fmt.Sprintf("process %d", pid)
		}
		return nil, fmt.Errorf("store: sqlite %s is in use by %s (lock %s); run one agentik per SQLite file, or use PostgreSQL for several instances: %w",
			db, by, lockPath(db), ErrInUse)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
