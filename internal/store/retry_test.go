package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/agentik/agentik/internal/testwait"
)

// TestPostgresAppendSurvivesKilledBackends kills the PostgreSQL backend of
// a store's writer while it waits, inside an append transaction, for the
// seq lock another instance holds, and then the backend of its next
// attempt too (as an administrator or a restarting server would): the
// Append still commits, once, on a new connection, and the store goes on
// writing.
func TestPostgresAppendSurvivesKilledBackends(t *testing.T) {
	app := "agentik-retry-" + newID()
	dsn := postgresOnly(t)
	a := open(t, dsn+"&application_name="+app, Options{RetryBackoff: time.Millisecond})
	mustAppend(t, a, createdRec("c1", ""))

	admin, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	adminDB, _ := admin.DB()
	t.Cleanup(func() { _ = adminDB.Close() })

	// Hold the seq lock, so a's append transaction waits inside it.
	hold := admin.Begin()
	t.Cleanup(func() { hold.Rollback() }) // a's Close waits for its writer
	if err := hold.Exec("SELECT pg_advisory_xact_lock(?)", a.seqLock).Error; err != nil {
		t.Fatal(err)
	}
	rec := textRec("c1", "written through a dead connection")
	done := make(chan error, 1)
	go func() { done <- a.Append(t.Context(), rec) }()

	// Kill the waiting backend twice: the writer's first attempt and its
	// retry (the one a failed batch always had) both die.
	var pids []int32
	for range 2 {
		pid := waitingBackend(t, admin, app, pids, done)
		var killed bool
		if err := admin.Raw("SELECT pg_terminate_backend(?, 5000)", pid).Scan(&killed).Error; err != nil || !killed {
			t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, killed, err)
		}
		pids = append(pids, pid)
	}
	waitingBackend(t, admin, app, pids, done) // the third attempt
	if err := hold.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Append through killed backends: %v", err)
	}
	mustAppend(t, a, textRec("c1", "after"))
	evs := allEvents(t, a)
	if len(evs) != 3 || evs[1].ID != rec.Event.ID || evs[1].Seq != rec.Event.Seq {
		t.Fatalf("stored %d events (%+v), want created, the killed append once, after", len(evs), seqs(evs))
	}
}

// waitingBackend waits until a backend of application app other than
// those in not waits for an advisory lock, and returns its pid; it fails
// the test if the Append (done) ends first. No event exists for "a backend
// waits for a lock": pg_stat_activity is the only witness, so it is
// re-read (testwait).
func waitingBackend(t *testing.T, db *gorm.DB, app string, not []int32, done <-chan error) int32 {
	t.Helper()
	var pid int32
	testwait.For(t, fmt.Sprintf("a backend of %s (but %v) waiting for the seq lock", app, not), func() bool {
		var pids []int32
		if err := db.Raw("SELECT pid FROM pg_stat_activity WHERE application_name = ? AND wait_event_type = 'Lock' AND wait_event = 'advisory'", app).Scan(&pids).Error; err != nil {
			t.Fatal(err)
		}
		for _, p := range pids {
			if !slices.Contains(not, p) {
				pid = p
				return true
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the Append ended after %d killed attempts (%v) instead of trying again", len(not), err)
		default:
		}
		return false
	})
	return pid
}
