package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// The schedule ops over the WebSocket are the REST routes' (one
// declaration each, op.go): what one makes the other reads, bad input is
// the same bad_request naming the field.
func TestWSScheduleOps(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	w := dialWS(t, ts)
	defer w.close()

	for _, tc := range []struct {
		fields map[string]any
		field  string
	}{
		{map[string]any{"prompt": "hi", "rrule": "FREQ=SOMETIMES"}, "rrule"},
		{map[string]any{"prompt": "hi", "cron": "61 * * * *"}, "cron"},
		{map[string]any{"prompt": "hi", "rrule": "FREQ=DAILY", "timezone": "Mars/Olympus"}, "timezone"},
		{map[string]any{"rrule": "FREQ=DAILY"}, "prompt"},
		{map[string]any{"prompt": "hi", "rrule": "FREQ=DAILY", "missed": "twice"}, "missed"},
	} {
		f := w.call(protocol.OpCreateSchedule, tc.fields)
		if f.OK || f.Error.Code != agent.CodeBadRequest || !strings.Contains(f.Error.Message, tc.field) {
			t.Fatalf("create_schedule %v: got %+v, want bad_request naming %s", tc.fields, f.Error, tc.field)
		}
	}

	var sc agent.Schedule
	w.ok(protocol.OpCreateSchedule, map[string]any{"prompt": "summarize", "rrule": "FREQ=DAILY;BYHOUR=9;BYMINUTE=0", "timezone": "Europe/Paris", "missed": "skip"}, &sc)
	if sc.ID == "" || sc.NextRun == nil || sc.Timezone != "Europe/Paris" || sc.Missed != "skip" || !sc.Enabled {
		t.Fatalf("created %+v", sc)
	}
	var rest agent.Schedule
	getJSONFrom(t, ts.URL+"/agentik/schedules/"+sc.ID, &rest)
	if rest.ID != sc.ID || rest.Prompt != "summarize" {
		t.Fatalf("REST sees %+v", rest)
	}
	var list struct{ Schedules []agent.Schedule }
	w.ok(protocol.OpListSchedules, nil, &list)
	if len(list.Schedules) != 1 || list.Schedules[0].ID != sc.ID {
		t.Fatalf("list_schedules %+v", list)
	}
	var off agent.Schedule
	w.ok(protocol.OpUpdateSchedule, map[string]any{"schedule_id": sc.ID, "enabled": false}, &off)
	if off.Enabled || off.NextRun != nil {
		t.Fatalf("disabled %+v", off)
	}
	f := w.call(protocol.OpUpdateSchedule, map[string]any{"schedule_id": sc.ID, "timezone": "Nowhere/At_All"})
	if f.OK || !strings.Contains(f.Error.Message, "timezone") {
		t.Fatalf("bad timezone: %+v", f.Error)
	}
	w.fail(protocol.OpUpdateSchedule, map[string]any{"enabled": true}, agent.CodeBadRequest) // no schedule_id
	var runs struct{ Runs []agent.ScheduleRun }
	w.ok(protocol.OpListScheduleRuns, map[string]any{"schedule_id": sc.ID}, &runs)
	if runs.Runs == nil || len(runs.Runs) != 0 {
		t.Fatalf("runs %+v", runs)
	}
	w.ok(protocol.OpDeleteSchedule, map[string]any{"schedule_id": sc.ID}, nil)
	w.fail(protocol.OpGetSchedule, map[string]any{"schedule_id": sc.ID}, agent.CodeNotFound)
	resp, err := http.Get(ts.URL + "/agentik/schedules/" + sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("REST after delete: %d", resp.StatusCode)
	}
}

// The account ops over the WebSocket: an admin makes a user, changes
// their role, makes and revokes a key (shown in that reply only), and
// deletes them.
func TestWSUserOps(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	w := dialWS(t, ts)
	defer w.close()

	var me agent.User
	w.ok(protocol.OpMe, nil, &me)
	if me.ID != agent.LocalUser || me.Role != agent.RoleAdmin {
		t.Fatalf("me %+v", me)
	}
	var u agent.User
	w.ok(protocol.OpCreateUser, map[string]any{"name": "Ann", "email": "ann@example.com"}, &u)
	if u.ID == "" || u.Role != agent.RoleMember {
		t.Fatalf("created %+v", u)
	}
	w.ok(protocol.OpUpdateUser, map[string]any{"user_id": u.ID, "role": "admin"}, &u)
	if u.Role != agent.RoleAdmin {
		t.Fatalf("role %+v", u)
	}
	f := w.call(protocol.OpUpdateUser, map[string]any{"user_id": u.ID, "role": "owner"})
	if f.OK || f.Error.Code != agent.CodeBadRequest || !strings.Contains(f.Error.Message, "role") {
		t.Fatalf("bad role: %+v", f.Error)
	}
	var k agent.NewKey
	w.ok(protocol.OpCreateKey, map[string]any{"user_id": u.ID, "name": "laptop"}, &k)
	if !strings.HasPrefix(k.Key, agent.KeyPrefix) {
		t.Fatalf("key %+v", k)
	}
	f = w.call(protocol.OpListKeys, map[string]any{"user_id": u.ID})
	if !f.OK || strings.Contains(string(f.Result), k.Key) || !strings.Contains(string(f.Result), k.ID) {
		t.Fatalf("list_keys %s %+v", f.Result, f.Error)
	}
	w.ok(protocol.OpRevokeKey, map[string]any{"user_id": u.ID, "key_id": k.ID}, nil)
	var keys struct{ Keys []json.RawMessage }
	w.ok(protocol.OpListKeys, map[string]any{"user_id": u.ID}, &keys)
	if len(keys.Keys) != 0 {
		t.Fatalf("keys after revoke %s", keys.Keys)
	}
	var users struct{ Users []agent.User }
	w.ok(protocol.OpListUsers, nil, &users)
	if len(users.Users) != 2 {
		t.Fatalf("users %+v", users)
	}
	w.ok(protocol.OpDeleteUser, map[string]any{"user_id": u.ID}, nil)
	w.fail(protocol.OpGetUser, map[string]any{"user_id": u.ID}, agent.CodeNotFound)
	var usage agent.UsageReport
	w.ok(protocol.OpGetUsage, map[string]any{"user": agent.LocalUser}, &usage)
}
