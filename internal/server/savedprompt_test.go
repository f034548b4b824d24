package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestSavedPrompts: a person saves, lists, changes and deletes their own
// prompts; bad input is bad_request naming the field and stores nothing;
// another user's private prompt is not_found on every route; a prompt
// shared with a project is read by its members (not changed: forbidden)
// and by nobody else; sharing needs a project one is in.
func TestSavedPrompts(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	_, annKey := ts.member(t, admin, "ann")
	bob, bobKey := ts.member(t, admin, "bob")
	_, eveKey := ts.member(t, admin, "eve")

	var p agent.SavedPrompt
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/saved-prompts", `{"name":"  Summary ","text":"Summarize this in three bullets."}`, 201)), &p); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.ID, "prompt_") || p.Name != "Summary" || !p.Mine || p.Project != "" {
		t.Fatalf("prompt %+v", p)
	}
	for _, bad := range []struct{ body, want string }{
		{`{"name":"x"}`, "name and text are required"},
		{`{"name":"","text":"t"}`, "name must not be empty"},
		{`{"name":"a\nb","text":"t"}`, "name must be one line"},
		{`{"name":"` + strings.Repeat("n", agent.MaxPromptName+1) + `","text":"t"}`, "name must be at most"},
		{`{"name":"n","text":"  "}`, "text must not be empty"},
		{`{"name":"n","text":"a\u0000b"}`, "without NUL"},
		{`{"name":"n","text":"t","project":"proj_nope"}`, "not found"},
		{`{"name":5}`, "name"},
		{`[1]`, "JSON object"},
	} {
		got := ts.as(t, annKey, "POST", "/agentik/saved-prompts", bad.body, map[bool]int{true: 404, false: 400}[strings.Contains(bad.want, "not found")])
		if !strings.Contains(got, bad.want) {
			t.Errorf("POST %s: %s, want %q", bad.body, got, bad.want)
		}
	}
	ts.as(t, annKey, "PATCH", "/agentik/saved-prompts/"+p.ID, `{"theme":1,"text":""}`, 400)
	if l := ts.as(t, annKey, "GET", "/agentik/saved-prompts", "", 200); strings.Count(l, `"id"`) != 1 || !strings.Contains(l, "three bullets") {
		t.Fatalf("ann's list after refused writes: %s", l)
	}

	// Bob and Eve see nothing of Ann's private prompt.
	for _, k := range []string{bobKey, eveKey} {
		if l := ts.as(t, k, "GET", "/agentik/saved-prompts", "", 200); strings.Contains(l, p.ID) {
			t.Fatalf("another's list holds ann's prompt: %s", l)
		}
		ts.as(t, k, "PATCH", "/agentik/saved-prompts/"+p.ID, `{"text":"mine now"}`, 404)
		ts.as(t, k, "DELETE", "/agentik/saved-prompts/"+p.ID, "", 404)
	}

	// Shared with Ann's project: Bob (a viewer) reads it, Eve does not.
	var proj agent.Project
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/projects", `{"name":"Launch","members":[{"user_id":"`+bob+`","role":"viewer"}]}`, 201)), &proj); err != nil {
		t.Fatal(err)
	}
	ts.as(t, eveKey, "POST", "/agentik/saved-prompts", `{"name":"n","text":"t","project":"`+proj.ID+`"}`, 404)
	shared := ts.as(t, annKey, "PATCH", "/agentik/saved-prompts/"+p.ID, `{"project":"`+proj.ID+`","text":"Summarize in two bullets."}`, 200)
	if !strings.Contains(shared, proj.ID) || !strings.Contains(shared, "two bullets") {
		t.Fatalf("shared %s", shared)
	}
	if l := ts.as(t, bobKey, "GET", "/agentik/saved-prompts", "", 200); !strings.Contains(l, p.ID) || !strings.Contains(l, `"mine":false`) {
		t.Fatalf("bob's list: %s", l)
	}
	if l := ts.as(t, eveKey, "GET", "/agentik/saved-prompts", "", 200); strings.Contains(l, p.ID) {
		t.Fatalf("eve's list: %s", l)
	}
	ts.as(t, bobKey, "PATCH", "/agentik/saved-prompts/"+p.ID, `{"text":"mine now"}`, 403)
	ts.as(t, bobKey, "DELETE", "/agentik/saved-prompts/"+p.ID, "", 403)
	ts.as(t, eveKey, "DELETE", "/agentik/saved-prompts/"+p.ID, "", 404)

	ts.as(t, annKey, "DELETE", "/agentik/saved-prompts/"+p.ID, "", 204)
	ts.as(t, annKey, "DELETE", "/agentik/saved-prompts/"+p.ID, "", 404)
	if l := ts.as(t, bobKey, "GET", "/agentik/saved-prompts", "", 200); strings.Contains(l, p.ID) {
		t.Fatalf("bob's list after the delete: %s", l)
	}
}

// TestPreferences: each person's settings are theirs (another's are not
// touched), refused values name what to send and change nothing, and an
// unknown model is refused.
func TestPreferences(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	_, annKey := ts.member(t, admin, "ann")
	_, bobKey := ts.member(t, admin, "bob")

	if got := ts.as(t, annKey, "GET", "/agentik/me/preferences", "", 200); !strings.Contains(got, `"theme":"system"`) {
		t.Fatalf("defaults %s", got)
	}
	got := ts.as(t, annKey, "PATCH", "/agentik/me/preferences", `{"theme":"dark","locale":"de-DE"}`, 200)
	if !strings.Contains(got, `"theme":"dark"`) || !strings.Contains(got, `"locale":"de-DE"`) {
		t.Fatalf("updated %s", got)
	}
	for _, bad := range []struct{ body, want string }{
		{`{"theme":"purple"}`, "theme must be one of system, light, dark"},
		{`{"locale":"not a tag"}`, "BCP 47"},
		{`{"model":"nobody/nothing"}`, "is not one this server offers"},
		{`{"theme":3}`, "theme"},
	} {
		if got := ts.as(t, annKey, "PATCH", "/agentik/me/preferences", bad.body, 400); !strings.Contains(got, bad.want) {
			t.Errorf("PATCH %s: %s, want %q", bad.body, got, bad.want)
		}
	}
	if got := ts.as(t, annKey, "GET", "/agentik/me/preferences", "", 200); !strings.Contains(got, `"theme":"dark"`) || !strings.Contains(got, `"locale":"de-DE"`) {
		t.Fatalf("after refused changes %s", got)
	}
	if got := ts.as(t, bobKey, "GET", "/agentik/me/preferences", "", 200); !strings.Contains(got, `"theme":"system"`) || strings.Contains(got, "de-DE") {
		t.Fatalf("bob's %s", got)
	}
	var ms struct {
		Models []agent.ModelInfo `json:"models"`
	}
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "GET", "/agentik/models", "", 200)), &ms); err != nil || len(ms.Models) == 0 {
		t.Fatalf("models %+v %v", ms, err)
	}
	if got := ts.as(t, annKey, "PATCH", "/agentik/me/preferences", `{"model":"`+ms.Models[0].ID+`"}`, 200); !strings.Contains(got, ms.Models[0].ID) {
		t.Fatalf("model %s", got)
	}
}
