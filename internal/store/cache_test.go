package store

import (
	"database/sql"
	"strings"
	"testing"

	_ "github.com/glebarez/go-sqlite"  // the "sqlite" database/sql driver
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// TestReadCacheUntilNextCommit: on SQLite, Conversation and Bounds are
// answered from memory until the next commit (a change made behind the
// store's back, which agentik never does, shows that); every commit
// shows at once. On PostgreSQL, where other instances commit, nothing is
// kept.
func TestReadCacheUntilNextCommit(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			dsn := be.dsn(t)
			s := open(t, dsn, Options{})
			ctx := t.Context()
			mustAppend(t, s, createdRec("c1", "a"))
			if c, err := s.Conversation(ctx, "c1"); err != nil || c.Title != "a" {
				t.Fatalf("Conversation = %+v, %v", c, err)
			}
			if _, head, err := s.Bounds(ctx); err != nil || head != 1 {
				t.Fatalf("Bounds head = %d, %v; want 1", head, err)
			}
			var raw *sql.DB
			var err error
			if be.name == "sqlite" {
				raw, err = sql.Open("sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite:")+"?_pragma=busy_timeout(5000)")
			} else {
				raw, err = sql.Open("pgx", dsn)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.ExecContext(ctx, "UPDATE conversation SET title = 'behind' WHERE id = 'c1'"); err != nil {
				t.Fatal(err)
			}
			want := "a" // kept
			if s.postgres {
				want = "behind"
			}
			if c, err := s.Conversation(ctx, "c1"); err != nil || c.Title != want {
				t.Fatalf("Conversation after a change behind the store: title %q, %v; want %q", c.Title, err, want)
			}
			mustAppend(t, s, renamedRec("c1", "b"), textRec("c1", " t"))
			if c, err := s.Conversation(ctx, "c1"); err != nil || c.Title != "b" {
				t.Fatalf("Conversation after a rename: title %q, %v; want b", c.Title, err)
			}
			if _, head, err := s.Bounds(ctx); err != nil || head != 3 {
				t.Fatalf("Bounds head after two appends = %d, %v; want 3", head, err)
			}
			mustAppend(t, s, deletedRec("c1"))
			if _, err := s.Conversation(ctx, "c1"); err == nil {
				t.Fatal("a deleted conversation is still found")
			}
		})
	}
}
