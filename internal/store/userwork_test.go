package store

import (
	"context"
	"errors"
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
