package store

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentik/agentik/internal/testwait"
)

// The writer's connection never checkpoints inside a commit; the
// checkpointer does it beside the writer, and under a steady stream of
// commits the WAL still starts over instead of growing for as long as the
// load lasts.
// Both modes: plain mode's writer is glebarez's, and its commits
// checkpointing inside were its p99.
func TestCheckpointsOffTheWriterAndTheWALRestarts(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{ModeFast, ModePlain} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			testCheckpointsOffTheWriter(t, mode)
		})
	}
}

func testCheckpointsOffTheWriter(t *testing.T, mode Mode) {
	path := filepath.Join(t.TempDir(), "w.db")
	s, err := Open(t.Context(), "sqlite:"+path, Options{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	probe, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	var auto int
	if err := s.w.Raw("PRAGMA wal_autocheckpoint").Scan(&auto).Error; err != nil {
		t.Fatal(err)
	}
	if auto != 0 {
		t.Errorf("the writer's wal_autocheckpoint is %d, want 0: its commits checkpoint", auto)
	}

	ids := make([]string, 20)
	for i := range ids {
		ids[i] = newID()
		if err := s.Append(t.Context(), createdRec(ids[i], "wal")); err != nil {
			t.Fatal(err)
		}
	}
	// One commit per Append, back to back, with the checkpointer running
	// as often as it can: commits land while every concurrent checkpoint
	// runs, so only the writer's tails let the WAL start over.
	s.ckpt.SetPace(0, 100)
	// Each commit writes at least one frame: without a restart the WAL
	// holds more frames than there were commits; a restarted one holds
	// about its limit (100 here) and what came during a checkpoint. A
	// checkpoint slowed by a loaded disk lets the WAL grow meanwhile, so
	// the test runs bursts until one ends with the WAL started over (the
	// measuring checkpoint between two bursts copies the WAL, so a burst
	// starts on a WAL that may restart at its first commit; only a restart
	// within the burst keeps its frames below the burst's commits).
	const burst = 1000
	commits := 0
	var frames int
	testwait.For(t, fmt.Sprintf("the WAL to start over within %d commits, by the writer's tail", burst), func() bool {
		for range burst {
			if err := s.Append(t.Context(), textRec(ids[commits%len(ids)], " a token")); err != nil {
				t.Fatal(err)
			}
			commits++
		}
		// A checkpoint that meets the checkpointer's reports -1 frames: ask
		// again.
		var busy, copied int
		for frames = -1; frames < 0; {
			if err := probe.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
				t.Fatal(err)
			}
		}
		st := s.ckpt.Stats()
		t.Logf("%d commits: %d checkpoints, %d tails by the writer, %d frames in the WAL", commits, st.Runs, st.Tails, frames)
		return st.Tails > 0 && frames < burst
	})
}
