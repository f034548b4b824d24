package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestDeleteUserDeletesTheirWork: deleting a user deletes their schedules
// (and runs) and the A2A push configs of their conversations' tasks;
// another user's stay, and so do the deleted user's conversations.
func TestDeleteUserDeletesTheirWork(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := context.Background()
		for _, id := range []string{"ann", "bob"} {
			if err := s.CreateUser(ctx, agent.User{ID: id, Name: id, Role: agent.RoleMember, CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		convOf := map[string]string{}
		for _, owner := range []string{"ann", "bob"} {
			cid := owner + "_%-" + newID() // LIKE's wildcards in an id match only themselves
			rec := createdRec(cid, "t")
			rec.Conversation.Owner = owner
			mustAppend(t, s, rec)
			convOf[owner] = cid
			if err := s.SetCursor(ctx, pushKeyPrefix+cid+"-7", `[{"id":"p","url":"http://x"}]`); err != nil {
				t.Fatal(err)
			}
			sc := agent.Schedule{ID: "sc-" + owner, Owner: owner, Prompt: "p", Cron: "0 * * * *", Timezone: "UTC", Missed: agent.MissedSkip, Enabled: true, CreatedAt: time.Now()}
			if err := s.PutSchedule(ctx, sc); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ClaimSlot(ctx, agent.ScheduleRun{ScheduleID: sc.ID, Slot: time.Now().Truncate(time.Hour), Outcome: agent.RunClaimed, ClaimedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DeleteUser(ctx, "ann"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Schedule(ctx, "sc-ann"); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("ann's schedule: %v, want not_found", err)
		}
		if runs, err := s.ScheduleRuns(ctx, "sc-ann"); err != nil || len(runs) != 0 {
			t.Errorf("ann's runs: %+v %v, want none", runs, err)
		}
		if _, err := s.Cursor(ctx, pushKeyPrefix+convOf["ann"]+"-7"); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("ann's push config: %v, want deleted", err)
		}
		if _, err := s.Schedule(ctx, "sc-bob"); err != nil {
			t.Errorf("bob's schedule: %v", err)
		}
		if runs, err := s.ScheduleRuns(ctx, "sc-bob"); err != nil || len(runs) != 1 {
			t.Errorf("bob's runs: %+v %v", runs, err)
		}
		if _, err := s.Cursor(ctx, pushKeyPrefix+convOf["bob"]+"-7"); err != nil {
			t.Errorf("bob's push config: %v", err)
		}
		if _, err := s.Conversation(ctx, convOf["ann"]); err != nil {
			t.Errorf("ann's conversation: %v, want kept", err)
		}
	})
}

// TestNULInTextColumnsIsBadRequest: U+0000 in a schedule's prompt or a
// user's name is bad_request naming the field on PostgreSQL and SQLite
// alike, never PostgreSQL's error, and nothing is written.
func TestNULInTextColumnsIsBadRequest(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := context.Background()
		err := s.CreateUser(ctx, agent.User{ID: "ann", Name: "A\x00nn", Role: agent.RoleMember, CreatedAt: time.Now()})
		if agent.ErrorCode(err) != agent.CodeBadRequest || !strings.Contains(err.Error(), "name") {
			t.Errorf("a user's name with NUL: %v, want bad_request naming name", err)
		}
		if _, err := s.User(ctx, "ann"); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("the refused user: %v, want not_found", err)
		}
		if err := s.CreateUser(ctx, agent.User{ID: "bob", Name: "Bob", Role: agent.RoleMember, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		err = s.UpdateUser(ctx, agent.User{ID: "bob", Name: "B\x00b", Role: agent.RoleMember})
		if agent.ErrorCode(err) != agent.CodeBadRequest || !strings.Contains(err.Error(), "name") {
			t.Errorf("an update to a name with NUL: %v, want bad_request naming name", err)
		}
		sc := agent.Schedule{ID: "sc", Owner: "bob", Prompt: "say\x00hi", Cron: "0 * * * *", Timezone: "UTC", Missed: agent.MissedSkip, Enabled: true, CreatedAt: time.Now()}
		err = s.PutSchedule(ctx, sc)
		if agent.ErrorCode(err) != agent.CodeBadRequest || !strings.Contains(err.Error(), "prompt") {
			t.Errorf("a schedule prompt with NUL: %v, want bad_request naming prompt", err)
		}
		if _, err := s.Schedule(ctx, "sc"); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("the refused schedule: %v, want not_found", err)
		}
	})
}
