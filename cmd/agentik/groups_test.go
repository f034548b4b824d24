package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestAgentSharedWithAGroup: an agent shared with the group eng (visibility
// "group") is seen by eng's member ann and not by bob, on REST, the
// WebSocket, /v1, A2A and MCP, on SQLite and PostgreSQL; once ann leaves
// the group she sees it nowhere; and a member shares only with a group
// she is in.
func TestAgentSharedWithAGroup(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "agentik.db")
			if backend == "postgres" {
				db = freshSchema(t)
			}
			agentSharedWithAGroup(t, startTeam(t, db))
		})
	}
}

// sees reports whether key sees agent slug on each surface, by name.
func sees(t *testing.T, tm *team, key, slug string) map[string]bool {
	t.Helper()
	u := tm.p.url
	out := map[string]bool{}
	_, b := call(t, key, "GET", u("/agentik/agents"), "")
	out["rest list"] = strings.Contains(string(b), `"slug":"`+slug+`"`)
	code, _ := call(t, key, "GET", u("/agentik/agents/"+slug), "")
	out["rest get"] = code == 200

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws := dialWS(t, ctx, tm.p, key)
	f := ws.do(ctx, `{"op":"list_agents"}`, nil)
	out["ws list_agents"] = strings.Contains(string(f.Result), `"slug":"`+slug+`"`)
	f = ws.do(ctx, `{"op":"get_agent","slug":"`+slug+`"}`, nil)
	out["ws get_agent"] = f.OK

	_, b = call(t, key, "GET", u("/v1/models"), "")
	out["/v1/models"] = strings.Contains(string(b), `"agent/`+slug+`"`)
	code, _ = call(t, key, "POST", u("/v1/chat/completions"), `{"model":"agent/`+slug+`","messages":[{"role":"user","content":"hi"}]}`)
	out["/v1/chat/completions"] = code == 200

	code, _ = call(t, key, "GET", u("/a2a/"+slug+"/.well-known/agent-card.json"), "")
	out["a2a card"] = code == 200

	out["mcp tools/list"] = strings.Contains(mcpToolsList(t, tm, key), slug)
	return out
}

// mcpToolsList initializes an MCP session as key and lists its tools.
func mcpToolsList(t *testing.T, tm *team, key string) string {
	t.Helper()
	post := func(session, body string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", tm.p.url("/mcp"), strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || session == "" {
		t.Fatalf("MCP initialize: %d %s", resp.StatusCode, body)
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp, body = post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"tools"`) {
		t.Fatalf("MCP tools/list: %d %s", resp.StatusCode, body)
	}
	return body
}

func agentSharedWithAGroup(t *testing.T, tm *team) {
	u := tm.p.url
	var grp struct{ ID, Name, Source string }
	must(t, tm.admin, "POST", u("/agentik/groups"), `{"name":"eng","members":["`+tm.ann.id+`"]}`, &grp)
	if grp.Source != "admin" {
		t.Errorf("the group: %+v", grp)
	}
	// The admin's agent, shared with eng.
	must(t, tm.admin, "POST", u("/agentik/agents"), `{"slug":"enghelp","name":"Eng helper","visibility":"group","groups":["`+grp.ID+`"]}`, nil)

	for surface, ok := range sees(t, tm, tm.ann.key, "enghelp") {
		if !ok {
			t.Errorf("ann (in eng) does not see the agent on %s", surface)
		}
	}
	for surface, ok := range sees(t, tm, tm.bob.key, "enghelp") {
		if ok {
			t.Errorf("bob (not in eng) sees the agent on %s", surface)
		}
	}
	// Unknown and hidden answer alike.
	_, hidden := call(t, tm.bob.key, "GET", u("/agentik/agents/enghelp"), "")
	_, unknown := call(t, tm.bob.key, "GET", u("/agentik/agents/nosuchagent"), "")
	if strings.ReplaceAll(string(hidden), "enghelp", "nosuchagent") != string(unknown) {
		t.Errorf("a hidden agent answers %s, an unknown one %s", hidden, unknown)
	}

	// Members: ann lists the groups she is in; bob none; only an admin
	// changes them; a member shares only with her own groups.
	var mine struct{ Groups []struct{ ID string } }
	must(t, tm.ann.key, "GET", u("/agentik/groups"), "", &mine)
	if len(mine.Groups) != 1 || mine.Groups[0].ID != grp.ID {
		t.Errorf("ann's groups: %+v", mine)
	}
	must(t, tm.bob.key, "GET", u("/agentik/groups"), "", &mine)
	if len(mine.Groups) != 0 {
		t.Errorf("bob's groups: %+v", mine)
	}
	if code, b := call(t, tm.bob.key, "GET", u("/agentik/groups/"+grp.ID), ""); code != 404 {
		t.Errorf("bob GET eng: %d %s, want 404", code, b)
	}
	if code, b := call(t, tm.ann.key, "PUT", u("/agentik/groups/"+grp.ID+"/members/"+tm.bob.id), ""); code != 403 {
		t.Errorf("ann adding bob to eng: %d %s, want 403", code, b)
	}
	if code, b := call(t, tm.bob.key, "POST", u("/agentik/agents"), `{"slug":"bobs","name":"Bob's","visibility":"group","groups":["`+grp.ID+`"]}`); code != 400 {
		t.Errorf("bob sharing with eng, not his: %d %s, want 400", code, b)
	}
	if code, b := call(t, tm.ann.key, "POST", u("/agentik/agents"), `{"slug":"anns","name":"Ann's","visibility":"group","groups":["`+grp.ID+`"]}`); code != 201 {
		t.Errorf("ann sharing with eng, hers: %d %s, want 201", code, b)
	}
	if code, b := call(t, tm.ann.key, "POST", u("/agentik/agents"), `{"slug":"anns2","name":"Ann's","visibility":"group"}`); code != 400 {
		t.Errorf("visibility group without groups: %d %s, want 400", code, b)
	}

	// Bob joins: he sees it; ann leaves: she does not.
	must(t, tm.admin, "PUT", u("/agentik/groups/"+grp.ID+"/members/"+tm.bob.id), "", nil)
	must(t, tm.admin, "DELETE", u("/agentik/groups/"+grp.ID+"/members/"+tm.ann.id), "", nil)
	if code, _ := call(t, tm.bob.key, "GET", u("/agentik/agents/enghelp"), ""); code != 200 {
		t.Errorf("bob, now in eng: %d", code)
	}
	if code, _ := call(t, tm.ann.key, "GET", u("/agentik/agents/enghelp"), ""); code != 404 {
		t.Errorf("ann, out of eng: %d", code)
	}
	// A deleted group shares nothing.
	must(t, tm.admin, "DELETE", u("/agentik/groups/"+grp.ID), "", nil)
	if code, _ := call(t, tm.bob.key, "GET", u("/agentik/agents/enghelp"), ""); code != 404 {
		t.Errorf("bob, after eng was deleted: %d", code)
	}
	var audit struct{ Entries []struct{ Action string } }
	must(t, tm.admin, "GET", u("/agentik/audit?action=group_members_changed"), "", &audit)
	if len(audit.Entries) != 2 {
		t.Errorf("the audit log's membership changes: %+v, want 2", audit.Entries)
	}
}

// TestGroupCLI: agentik group makes, lists, renames, fills and deletes
// groups on the running server, as the admin; a member's key is refused.
func TestGroupCLI(t *testing.T) {
	t.Parallel()
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"))
	cli := subcommand(t, tm.p, "group")
	id, err := cli(tm.admin, "add", "eng", tm.ann.id)
	if err != nil || !strings.HasPrefix(id, "grp_") {
		t.Fatalf("add: %q %v", id, err)
	}
	for _, args := range [][]string{{"rename", id, "engineering"}, {"member", "add", id, tm.bob.id}, {"member", "remove", id, tm.ann.id}} {
		if _, err := cli(tm.admin, args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	list, err := cli(tm.admin, "list")
	if err != nil || !strings.Contains(list, "engineering") || !strings.Contains(list, tm.bob.id) || strings.Contains(list, tm.ann.id) || !strings.Contains(list, "admin") {
		t.Errorf("list: %q %v", list, err)
	}
	if _, err := cli(tm.ann.key, "add", "mine"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a member's add: %v, want 403", err)
	}
	if _, err := cli(tm.admin, "delete", id); err != nil {
		t.Fatal(err)
	}
	if list, _ := cli(tm.admin, "list"); strings.Contains(list, id) {
		t.Errorf("list after delete: %q", list)
	}
}

// TestProjectSharedWithAGroup runs the project rule grown by groups on
// the real binary, SQLite and PostgreSQL: a group made a project's editor
// gives its members the project, its chats and its knowledge (a private
// base of the project's owner) on REST and WebSocket, and file_search in
// a project chat a member starts searches that base; a user outside the
// group gets not_found for each, as for an unknown id; once removed from
// the group, the member gets not_found at the next request.
func TestProjectSharedWithAGroup(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "agentik.db")
			if backend == "postgres" {
				db = freshSchema(t)
			}
			projectSharedWithAGroup(t, startTeam(t, db))
		})
	}
}

func projectSharedWithAGroup(t *testing.T, tm *team) {
	u := tm.p.url
	var grp struct{ ID string }
	must(t, tm.admin, "POST", u("/agentik/groups"), `{"name":"launch-team","members":["`+tm.ann.id+`"]}`, &grp)

	// The admin's private base, with a document.
	code, f := upload(t, u("/agentik/files"), tm.admin, "handbook.txt", "text/plain", []byte("Holidays\n\nEvery member has 30 days of paid leave a year."), false)
	if code != 201 {
		t.Fatalf("upload: %d %v", code, f)
	}
	fileID := f["id"].(string)
	if got := waitFile(t, tm.p, tm.admin, fileID); got.Status != agent.FileProcessed {
		t.Fatalf("file: %+v", got)
	}
	var kb agent.Knowledge
	must(t, tm.admin, "POST", u("/agentik/knowledge"), `{"name":"handbook","file_ids":["`+fileID+`"]}`, &kb)

	// Bad members: an unknown group, a row naming a user and a group.
	for _, body := range []string{
		`{"name":"x","members":[{"group_id":"grp_nosuch","role":"viewer"}]}`,
		`{"name":"x","members":[{"group_id":"` + grp.ID + `","user_id":"` + tm.bob.id + `","role":"viewer"}]}`,
		`{"name":"x","members":[{"group_id":"` + grp.ID + `","role":"owner"}]}`,
	} {
		if code, b := call(t, tm.admin, "POST", u("/agentik/projects"), body); code != 400 || !strings.Contains(string(b), "members[0]") {
			t.Errorf("POST /agentik/projects %s: %d %s, want 400 naming members[0]", body, code, b)
		}
	}
	var p agent.Project
	must(t, tm.admin, "POST", u("/agentik/projects"), `{"name":"Launch","knowledge":["`+kb.ID+`"],"members":[{"group_id":"`+grp.ID+`","role":"editor"}]}`, &p)
	var c agent.Conversation
	must(t, tm.admin, "POST", u("/agentik/conversations"), `{"title":"plan zebra","project":"`+p.ID+`"}`, &c)

	// reads says, per surface, whether key reads the project, the chat and
	// the base.
	reads := func(key string) map[string]bool {
		out := map[string]bool{}
		for name, path := range map[string]string{"rest project": "/agentik/projects/" + p.ID, "rest chat": "/agentik/conversations/" + c.ID,
			"rest messages": "/agentik/conversations/" + c.ID + "/messages", "rest knowledge": "/agentik/knowledge/" + kb.ID} {
			code, b := call(t, key, "GET", u(path), "")
			if code != 200 && (code != 404 || !strings.Contains(string(b), "not_found")) {
				t.Errorf("GET %s: %d %s", path, code, b)
			}
			out[name] = code == 200
		}
		code, _ := call(t, key, "POST", u("/agentik/knowledge/"+kb.ID+"/search"), `{"query":"paid leave"}`)
		out["rest search"] = code == 200
		for name, l := range map[string][2]string{"rest list projects": {"/agentik/projects", p.ID}, "rest list chats": {"/agentik/conversations", c.ID}, "rest list knowledge": {"/agentik/knowledge", kb.ID}} {
			_, b := call(t, key, "GET", u(l[0]), "")
			out[name] = strings.Contains(string(b), l[1])
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ws := dialWS(t, ctx, tm.p, key)
		for name, cmd := range map[string]string{"ws project": `{"op":"get_project","project_id":"` + p.ID + `"}`,
			"ws chat": `{"op":"get_conversation","conversation_id":"` + c.ID + `"}`, "ws knowledge": `{"op":"get_knowledge","knowledge_id":"` + kb.ID + `"}`} {
			f := ws.do(ctx, cmd, nil)
			if !f.OK && (f.Error == nil || f.Error.Code != "not_found") {
				t.Errorf("%s: %+v", cmd, f)
			}
			out[name] = f.OK
		}
		return out
	}
	for surface, ok := range reads(tm.ann.key) {
		if !ok {
			t.Errorf("ann (in the group) does not read it on %s", surface)
		}
	}
	for surface, ok := range reads(tm.bob.key) {
		if ok {
			t.Errorf("bob (not in the group) reads it on %s", surface)
		}
	}

	// Ann, an editor through the group, starts a chat in the project: its
	// file_search searches the project's base.
	var mine agent.Conversation
	must(t, tm.ann.key, "POST", u("/agentik/conversations"), `{"project":"`+p.ID+`"}`, &mine)
	must(t, tm.ann.key, "POST", u("/agentik/conversations/"+mine.ID+"/send"), `{"content":[{"type":"text","body":"[[tool=file_search args={\"query\":\"paid leave\"}]]"}]}`, nil)
	waitEnd(t, tm.ann.key, u("/agentik/conversations/"+mine.ID+"/events"))
	if !givenPassage(tm, "30 days of paid leave") {
		t.Error("file_search in ann's project chat was not given the project's passage")
	}
	if code, b := call(t, tm.bob.key, "POST", u("/agentik/conversations/"+mine.ID+"/send"), sendText("hi")); code != 404 {
		t.Errorf("bob sends in ann's project chat: %d %s", code, b)
	}

	// A base shared with the group (not through a project): its members
	// read it, others do not; "group" needs groups.
	var gkb agent.Knowledge
	must(t, tm.admin, "POST", u("/agentik/knowledge"), `{"name":"team notes","visibility":"group","groups":["`+grp.ID+`"]}`, &gkb)
	if gkb.Visibility != "group" || len(gkb.Groups) != 1 || gkb.Groups[0] != grp.ID {
		t.Errorf("the group's base: %+v", gkb)
	}
	if code, _ := call(t, tm.ann.key, "GET", u("/agentik/knowledge/"+gkb.ID), ""); code != 200 {
		t.Errorf("ann GET the group's base: %d", code)
	}
	if code, b := call(t, tm.bob.key, "GET", u("/agentik/knowledge/"+gkb.ID), ""); code != 404 || !strings.Contains(string(b), "not_found") {
		t.Errorf("bob GET the group's base: %d %s", code, b)
	}
	if code, b := call(t, tm.admin, "POST", u("/agentik/knowledge"), `{"name":"x","visibility":"group"}`); code != 400 || !strings.Contains(string(b), "groups") {
		t.Errorf("visibility group without groups: %d %s", code, b)
	}
	if code, b := call(t, tm.bob.key, "POST", u("/agentik/knowledge"), `{"name":"x","visibility":"group","groups":["`+grp.ID+`"]}`); code != 400 {
		t.Errorf("bob shares with a group he is not in: %d %s", code, b)
	}

	// Out of the group, out of the project: at her next request.
	must(t, tm.admin, "DELETE", u("/agentik/groups/"+grp.ID+"/members/"+tm.ann.id), "", nil)
	for surface, ok := range reads(tm.ann.key) {
		if ok {
			t.Errorf("ann, removed from the group, still reads it on %s", surface)
		}
	}
	if code, _ := call(t, tm.ann.key, "GET", u("/agentik/knowledge/"+gkb.ID), ""); code != 404 {
		t.Errorf("ann, out of the group, GET its base: %d", code)
	}
}

// sendText is the body of a send of text.
func sendText(text string) string {
	b, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "body": text}}})
	return string(b)
}
