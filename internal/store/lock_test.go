package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
