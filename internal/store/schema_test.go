package store

import (
	"fmt"
	"testing"
)

// forgetSchemaPrint makes a database one from before schema prints, for
// tests that make an old database by dropping what an old version lacked.
const forgetSchemaPrint = "DELETE FROM meta WHERE key = '" + metaSchema + "'"

// TestSchemaPrintSkipsTheMigration: a database whose stored print is the
// row structs' is not inspected by gorm's migration on open (a column
// dropped behind the store's back stays dropped); one whose print differs
// (a row struct changed, or made before prints) is migrated and gets the
// current print.
func TestSchemaPrintSkipsTheMigration(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		stored := func(s *Store) string {
			t.Helper()
			var v []string
			if err := s.r.Raw("SELECT value FROM meta WHERE key = ?", metaSchema).Scan(&v).Error; err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(v)
		}
		s, err := Open(t.Context(), dsn, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint([]string{printOf(s.postgres)})
		if got := stored(s); got != want {
			t.Fatalf("print after the first open: %s, want %s", got, want)
		}
		if err := s.w.Exec("ALTER TABLE feedback DROP COLUMN comment").Error; err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		s, err = Open(t.Context(), dsn, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if s.w.Migrator().HasColumn(&feedbackRow{}, "comment") {
			t.Fatal("the reopen with a matching print ran gorm's migration (feedback.comment is back)")
		}
		if err := s.w.Exec("UPDATE meta SET value = 'a print of older row structs' WHERE key = ?", metaSchema).Error; err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		s = open(t, dsn, Options{})
		if !s.w.Migrator().HasColumn(&feedbackRow{}, "comment") {
			t.Fatal("a differing print did not migrate: feedback.comment is missing")
		}
		if got := stored(s); got != want {
			t.Fatalf("print after the migration: %s, want %s", got, want)
		}
	})
}

// TestSchemaPrintFollowsTheRowStructs: the print changes with a field's
// tag, and differs between the two databases.
func TestSchemaPrintFollowsTheRowStructs(t *testing.T) {
	a := printOf(false)
	if a != printOf(false) {
		t.Fatal("the print is not stable")
	}
	if a == printOf(true) {
		t.Fatal("SQLite's and PostgreSQL's prints are equal")
	}
	type changed struct {
		Name  string `gorm:"primaryKey"`
		Value string `gorm:"not null;index"`
	}
	if printTables(false, append(append([][]any(nil), migratedTables...), []any{&changed{}})) == a {
		t.Fatal("a table more did not change the print")
	}
}
