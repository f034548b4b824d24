package server

import (
	"testing"

	"github.com/agentik/agentik/internal/protocol"
)

// TestOpTable: the ops routes.go registers through Server.op are exactly
// those protocol.TableOp names (Decode hands those to the table
// unchecked; one missing here would be an op nobody runs).
func TestOpTable(t *testing.T) {
	s := New(Config{})
	if len(s.ops) == 0 {
		t.Fatal("no op registered")
	}
	for name := range s.ops {
		if !protocol.TableOp(name) {
			t.Errorf("op %q is in the table but not protocol.TableOp", name)
		}
	}
	for _, name := range []string{
		protocol.OpListSchedules, protocol.OpGetSchedule, protocol.OpCreateSchedule, protocol.OpUpdateSchedule, protocol.OpDeleteSchedule, protocol.OpListScheduleRuns,
		protocol.OpMe, protocol.OpGetUsage, protocol.OpListUsers, protocol.OpGetUser, protocol.OpCreateUser, protocol.OpUpdateUser, protocol.OpDeleteUser,
		protocol.OpListKeys, protocol.OpCreateKey, protocol.OpRevokeKey,
	} {
		if s.ops[name] == nil {
			t.Errorf("protocol.TableOp %q has no op in the table", name)
		}
	}
}

func TestWildcards(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"GET /agentik/users", nil},
		{"GET /agentik/users/{user_id}/keys/{key_id}", []string{"user_id", "key_id"}},
		{"GET /{$}", nil},
		{"GET /files/{path...}", []string{"path"}},
	} {
		got := wildcards(tc.pattern)
		if len(got) != len(tc.want) {
			t.Fatalf("wildcards(%q) = %v, want %v", tc.pattern, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("wildcards(%q) = %v, want %v", tc.pattern, got, tc.want)
			}
		}
	}
}
