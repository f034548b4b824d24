package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// scimToken is the rigs' AGENTIK_SCIM_TOKEN.
const scimToken = "scim-test-token-0123456789abcdef0123"

// scimDoc is a SCIM answer, decoded loosely.
type scimDoc map[string]any

func (d scimDoc) str(k string) string { s, _ := d[k].(string); return s }

// scimDo sends a SCIM request as an identity provider does (its token,
// application/scim+json) and returns the status and the decoded answer;
// it checks that every answer with a body is SCIM JSON.
func scimDo(t *testing.T, p *proc, token, method, path, body string) (int, scimDoc) {
	t.Helper()
	req, err := http.NewRequest(method, p.url("/scim/v2"+path), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/scim+json")
	}
	req.Header.Set("Accept", "application/scim+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d scimDoc
	if resp.StatusCode != http.StatusNoContent {
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/scim+json") {
			t.Errorf("%s %s: Content-Type %q, want application/scim+json", method, path, ct)
		}
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
			t.Fatalf("%s %s: %d, not JSON: %v", method, path, resp.StatusCode, err)
		}
	}
	return resp.StatusCode, d
}

// scimMust is scimDo that wants status.
func scimMust(t *testing.T, p *proc, method, path, body string, status int) scimDoc {
	t.Helper()
	code, d := scimDo(t, p, scimToken, method, path, body)
	if code != status {
		t.Fatalf("%s %s: %d %v, want %d\nlogs:\n%s", method, path, code, d, status, p.logs)
	}
	return d
}

// wantSCIMError checks that d is SCIM's error of status (and scimType).
func wantSCIMError(t *testing.T, what string, code int, d scimDoc, status int, scimType string) {
	t.Helper()
	schemas, _ := d["schemas"].([]any)
	if code != status || len(schemas) != 1 || schemas[0] != "urn:ietf:params:scim:api:messages:2.0:Error" ||
		d.str("status") != itoaTest(status) || d.str("scimType") != scimType || d.str("detail") == "" {
		t.Errorf("%s: %d %v, want SCIM's error with status %q and scimType %q", what, code, d, itoaTest(status), scimType)
	}
}

func itoaTest(n int) string { b, _ := json.Marshal(n); return string(b) }

// startSCIM is the real binary with SCIM on and the admin's key.
func startSCIM(t *testing.T, db string) *team {
	t.Helper()
	return startTeam(t, db, "AGENTIK_SCIM_TOKEN="+scimToken)
}

// userKey makes an API key for user id (as the admin) and returns it.
func userKey(t *testing.T, tm *team, id string) string {
	t.Helper()
	var k struct{ Key string }
	must(t, tm.admin, "POST", tm.p.url("/agentik/users/"+id+"/keys"), `{"name":"laptop"}`, &k)
	return k.Key
}

// cutOff checks that deactivating a user (do) closes their WebSocket with
// 1008 and stops their key, and that it works again after reactivate.
func cutOff(t *testing.T, tm *team, key string, deactivate, reactivate func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws := dialWS(t, ctx, tm.p, key)
	if f := ws.do(ctx, `{"op":"subscribe","stream":"all"}`, nil); !f.OK {
		t.Fatalf("subscribe: %+v", f)
	}
	deactivate()
	_, _, err := ws.c.Read(ctx)
	if st := websocket.CloseStatus(err); st != websocket.StatusPolicyViolation {
		t.Errorf("the deactivated user's socket ended with %v (%v), want 1008", st, err)
	}
	if code, _ := call(t, key, "GET", tm.p.url("/agentik/me"), ""); code != 401 {
		t.Errorf("the deactivated user's key: %d, want 401", code)
	}
	reactivate()
	if code, b := call(t, key, "GET", tm.p.url("/agentik/me"), ""); code != 200 {
		t.Errorf("the reactivated user's key: %d %s, want 200", code, b)
	}
}

// TestSCIMAsOkta replays the requests Okta's SCIM 2.0 provisioning sends
// (developer.okta.com, "SCIM 2.0 protocol reference"): look the user up
// by userName, create, read, deactivate with a PATCH of active in a
// value object (while the user holds a WebSocket: closed 1008) and
// reactivate, update with PUT, push a group and its members with PATCH,
// rename it, delete it; and the errors in SCIM's schema.
func TestSCIMAsOkta(t *testing.T) {
	t.Parallel()
	tm := startSCIM(t, filepath.Join(t.TempDir(), "agentik.db"))
	p := tm.p

	// Without the token, or with another: 401 in SCIM's schema.
	code, d := scimDo(t, p, "", "GET", "/Users", "")
	wantSCIMError(t, "no token", code, d, 401, "")
	code, d = scimDo(t, p, tm.admin, "GET", "/Users", "")
	wantSCIMError(t, "an API key instead of the SCIM token", code, d, 401, "")

	filter := "/Users?filter=" + url.QueryEscape(`userName eq "ann.lee@example.com"`) + "&startIndex=1&count=100"
	d = scimMust(t, p, "GET", filter, "", 200)
	if d["totalResults"] != 0.0 || d["schemas"].([]any)[0] != "urn:ietf:params:scim:api:messages:2.0:ListResponse" {
		t.Errorf("the lookup before create: %v", d)
	}
	created := scimMust(t, p, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"ann.lee@example.com",
		"name":{"givenName":"Ann","familyName":"Lee"},"emails":[{"primary":true,"value":"ann.lee@example.com","type":"work"}],
		"displayName":"Ann Lee","locale":"en-US","externalId":"00ujl29u0le5T6Aj10h7","groups":[],"password":"1mz050nq","active":true}`, 201)
	id := created.str("id")
	if id == "" || created.str("userName") != "ann.lee@example.com" || created["active"] != true {
		t.Fatalf("created: %v", created)
	}
	d = scimMust(t, p, "GET", filter, "", 200)
	if d["totalResults"] != 1.0 || d["Resources"].([]any)[0].(map[string]any)["id"] != id {
		t.Errorf("the lookup after create: %v", d)
	}
	if got := scimMust(t, p, "GET", "/Users/"+id, "", 200); got.str("displayName") != "Ann Lee" {
		t.Errorf("GET the user: %v", got)
	}
	// The same userName again: 409 uniqueness; an unknown id: 404.
	code, d = scimDo(t, p, scimToken, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"ann.lee@example.com","emails":[{"value":"other@example.com","primary":true}]}`)
	wantSCIMError(t, "a duplicate userName", code, d, 409, "uniqueness")
	code, d = scimDo(t, p, scimToken, "GET", "/Users/no-such-id", "")
	wantSCIMError(t, "an unknown user", code, d, 404, "")

	// Deactivate while Ann holds a WebSocket; reactivate.
	key := userKey(t, tm, id)
	cutOff(t, tm, key, func() {
		d := scimMust(t, p, "PATCH", "/Users/"+id, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`, 200)
		if d["active"] != false {
			t.Errorf("after the deactivating PATCH: %v", d)
		}
	}, func() {
		scimMust(t, p, "PATCH", "/Users/"+id, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":true}}]}`, 200)
	})

	// A profile update: Okta PUTs the whole user.
	d = scimMust(t, p, "PUT", "/Users/"+id, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"id":"`+id+`","userName":"ann.lee@example.com",
		"name":{"givenName":"Ann","familyName":"Lee-Smith"},"emails":[{"primary":true,"value":"ann.lee@example.com","type":"work"}],"displayName":"Ann Lee-Smith","active":true}`, 200)
	if d.str("displayName") != "Ann Lee-Smith" {
		t.Errorf("after PUT: %v", d)
	}
	var me struct{ Name, Email string }
	must(t, key, "GET", p.url("/agentik/me"), "", &me)
	if me.Name != "Ann Lee-Smith" || me.Email != "ann.lee@example.com" {
		t.Errorf("Ann's account after PUT: %+v", me)
	}

	// Group push.
	grp := scimMust(t, p, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"eng","members":[]}`, 201)
	gid := grp.str("id")
	code, d = scimDo(t, p, scimToken, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"eng"}`)
	wantSCIMError(t, "a duplicate group", code, d, 409, "uniqueness")
	scimMust(t, p, "PATCH", "/Groups/"+gid, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"add","path":"members","value":[{"value":"`+id+`","display":"ann.lee@example.com"}]}]}`, 204)
	if got := members(scimMust(t, p, "GET", "/Groups/"+gid, "", 200)); !slices.Equal(got, []string{id}) {
		t.Errorf("members after add: %v", got)
	}
	d = scimMust(t, p, "GET", "/Groups?filter="+url.QueryEscape(`displayName eq "eng"`)+"&excludedAttributes=members", "", 200)
	if d["totalResults"] != 1.0 || d["Resources"].([]any)[0].(map[string]any)["members"] != nil {
		t.Errorf("the group lookup without members: %v", d)
	}
	scimMust(t, p, "PATCH", "/Groups/"+gid, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"remove","path":"members[value eq \"`+id+`\"]"}]}`, 204)
	if got := members(scimMust(t, p, "GET", "/Groups/"+gid, "", 200)); len(got) != 0 {
		t.Errorf("members after remove: %v", got)
	}
	scimMust(t, p, "PATCH", "/Groups/"+gid, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"id":"`+gid+`","displayName":"engineering"}}]}`, 204)
	var list struct {
		Groups []struct{ ID, Name, Source string }
	}
	must(t, tm.admin, "GET", p.url("/agentik/groups"), "", &list)
	if len(list.Groups) != 1 || list.Groups[0].Name != "engineering" || list.Groups[0].Source != "scim" {
		t.Errorf("agentik's groups after the rename: %+v", list)
	}
	scimMust(t, p, "DELETE", "/Groups/"+gid, "", 204)
	code, d = scimDo(t, p, scimToken, "GET", "/Groups/"+gid, "")
	wantSCIMError(t, "a deleted group", code, d, 404, "")

	// Filters it does not support.
	for _, f := range []string{`title eq "x"`, `userName co "ann"`, `userName eq "a" or userName eq "b"`} {
		code, d := scimDo(t, p, scimToken, "GET", "/Users?filter="+url.QueryEscape(f), "")
		wantSCIMError(t, "filter "+f, code, d, 400, "invalidFilter")
	}

	// Delete: gone, and so is the key.
	scimMust(t, p, "DELETE", "/Users/"+id, "", 204)
	code, d = scimDo(t, p, scimToken, "GET", "/Users/"+id, "")
	wantSCIMError(t, "a deleted user", code, d, 404, "")
	if code, _ := call(t, key, "GET", p.url("/agentik/me"), ""); code != 401 {
		t.Errorf("a deleted user's key: %d", code)
	}

	// Every change is in the audit log as SCIM's.
	var audit struct {
		Entries []struct{ Actor, Action, Target string }
	}
	must(t, tm.admin, "GET", p.url("/agentik/audit?actor=scim&limit=1000"), "", &audit)
	var actions []string
	for _, e := range audit.Entries {
		actions = append(actions, e.Action)
	}
	for _, want := range []string{"user_created", "user_updated", "group_created", "group_members_changed", "group_renamed", "group_deleted", "user_deleted"} {
		if !slices.Contains(actions, want) {
			t.Errorf("the audit log has no %s by scim: %v", want, actions)
		}
	}
}

// members are the member ids of a SCIM group.
func members(d scimDoc) []string {
	out := []string{}
	ms, _ := d["members"].([]any)
	for _, m := range ms {
		out = append(out, m.(map[string]any)["value"].(string))
	}
	return out
}

// TestSCIMAsEntraID replays the requests Microsoft Entra ID's provisioning
// service sends (learn.microsoft.com, "Tutorial: Develop and plan
// provisioning for a SCIM endpoint"): the connectivity check of a random
// userName, create, lookup, PATCH with capitalised ops, string booleans
// and emails[type eq "work"].value, deactivate (the user's WebSocket
// closes with 1008) and reactivate, groups with members added and removed
// (both forms of remove), and delete.
func TestSCIMAsEntraID(t *testing.T) {
	t.Parallel()
	tm := startSCIM(t, filepath.Join(t.TempDir(), "agentik.db"))
	p := tm.p
	patch := func(path, ops string, status int) scimDoc {
		t.Helper()
		return scimMust(t, p, "PATCH", path, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":`+ops+`}`, status)
	}

	d := scimMust(t, p, "GET", "/Users?filter="+url.QueryEscape(`userName eq "5b2d2d0a-1b1e-4e2b-9d6e-0e3f7c1a9b2c"`), "", 200)
	if d["totalResults"] != 0.0 {
		t.Errorf("the connectivity check: %v", d)
	}
	created := scimMust(t, p, "POST", "/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
		"externalId":"bob","userName":"Bob@contoso.com","active":true,"displayName":"Bob Brown",
		"emails":[{"primary":true,"type":"work","value":"Bob@contoso.com"}],"meta":{"resourceType":"User"},
		"name":{"formatted":"Bob Brown","familyName":"Brown","givenName":"Bob"},"roles":[]}`, 201)
	id := created.str("id")
	d = scimMust(t, p, "GET", "/Users?filter="+url.QueryEscape(`userName eq "bob@contoso.com"`), "", 200)
	if d["totalResults"] != 1.0 {
		t.Errorf("the lookup of userName (any case): %v", d)
	}
	d = patch("/Users/"+id, `[{"op":"Replace","path":"displayName","value":"Bobby Brown"},
		{"op":"Replace","path":"emails[type eq \"work\"].value","value":"bobby@contoso.com"},
		{"op":"Add","path":"name.givenName","value":"Bobby"},
		{"op":"Replace","path":"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department","value":"Sales"}]`, 200)
	if d.str("displayName") != "Bobby Brown" || d["emails"].([]any)[0].(map[string]any)["value"] != "bobby@contoso.com" {
		t.Errorf("after Entra's PATCH: %v", d)
	}

	key := userKey(t, tm, id)
	cutOff(t, tm, key, func() {
		d := patch("/Users/"+id, `[{"op":"Replace","path":"active","value":"False"}]`, 200)
		if d["active"] != false {
			t.Errorf("after active False: %v", d)
		}
	}, func() {
		patch("/Users/"+id, `[{"op":"Replace","path":"active","value":"True"}]`, 200)
	})
	code, d := scimDo(t, p, scimToken, "PATCH", "/Users/"+id, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"Replace","path":"active","value":"maybe"}]}`)
	wantSCIMError(t, "active maybe", code, d, 400, "invalidValue")

	grp := scimMust(t, p, "POST", "/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group","http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"],
		"externalId":"8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159","displayName":"Sales","meta":{"resourceType":"Group"}}`, 201)
	gid := grp.str("id")
	d = scimMust(t, p, "GET", "/Groups?excludedAttributes=members&filter="+url.QueryEscape(`displayName eq "Sales"`), "", 200)
	if d["totalResults"] != 1.0 {
		t.Errorf("the group lookup: %v", d)
	}
	patch("/Groups/"+gid, `[{"op":"Add","path":"members","value":[{"value":"`+id+`"}]}]`, 204)
	if got := members(scimMust(t, p, "GET", "/Groups/"+gid, "", 200)); !slices.Equal(got, []string{id}) {
		t.Errorf("members after Add: %v", got)
	}
	patch("/Groups/"+gid, `[{"op":"Remove","path":"members","value":[{"value":"`+id+`"}]}]`, 204)
	if got := members(scimMust(t, p, "GET", "/Groups/"+gid, "", 200)); len(got) != 0 {
		t.Errorf("members after Remove with a value: %v", got)
	}
	patch("/Groups/"+gid, `[{"op":"Add","path":"members","value":[{"value":"`+id+`"}]}]`, 204)
	patch("/Groups/"+gid, `[{"op":"Remove","path":"members[value eq \"`+id+`\"]"}]`, 204)
	if got := members(scimMust(t, p, "GET", "/Groups/"+gid, "", 200)); len(got) != 0 {
		t.Errorf("members after Remove of members[value eq]: %v", got)
	}
	code, d = scimDo(t, p, scimToken, "PATCH", "/Groups/"+gid, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"Move","path":"members"}]}`)
	wantSCIMError(t, "op Move", code, d, 400, "invalidSyntax")

	// Entra deletes a user after its soft-delete period.
	patch("/Users/"+id, `[{"op":"Replace","path":"active","value":"False"}]`, 200)
	scimMust(t, p, "DELETE", "/Users/"+id, "", 204)
	code, d = scimDo(t, p, scimToken, "DELETE", "/Users/"+id, "")
	wantSCIMError(t, "a second delete", code, d, 404, "")

	// Discovery.
	if d := scimMust(t, p, "GET", "/ServiceProviderConfig", "", 200); d["patch"].(map[string]any)["supported"] != true {
		t.Errorf("ServiceProviderConfig: %v", d)
	}
	if d := scimMust(t, p, "GET", "/ResourceTypes", "", 200); d["totalResults"] != 2.0 {
		t.Errorf("ResourceTypes: %v", d)
	}
	if d := scimMust(t, p, "GET", "/Schemas/urn:ietf:params:scim:schemas:core:2.0:User", "", 200); d.str("name") != "User" {
		t.Errorf("the User schema: %v", d)
	}
}

// TestSCIMOff: without AGENTIK_SCIM_TOKEN every SCIM path is 404, in
// SCIM's schema.
func TestSCIMOff(t *testing.T) {
	t.Parallel()
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"))
	code, d := scimDo(t, tm.p, scimToken, "GET", "/Users", "")
	wantSCIMError(t, "SCIM off", code, d, 404, "")
}
