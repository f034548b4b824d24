package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

// memorySystem is the system prompt of the fake model's request whose last
// user message is text.
func memorySystem(t *testing.T, fake *llmtest.Server, text string) string {
	t.Helper()
	reqs := fake.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		ms := reqs[i].Messages
		for j := len(ms) - 1; j >= 0; j-- {
			if ms[j].Role == "user" {
				if ms[j].Content == text {
					return systemOf(reqs[i])
				}
				break
			}
		}
	}
	t.Fatalf("no model request ends with the user message %q", text)
	return ""
}

// send runs one turn in a new conversation as key and returns the turn's
// SSE stream (the send answers it until the end event).
func (tm *team) send(t *testing.T, key, text string) (string, string) {
	t.Helper()
	var c struct{ ID string }
	must(t, key, "POST", tm.p.url("/agentik/conversations"), `{}`, &c)
	body, _ := json.Marshal(map[string]any{"content": []agent.Content{agent.Text(text)}})
	code, b := call(t, key, "POST", tm.p.url("/agentik/conversations/"+c.ID+"/send"), string(body))
	if code != 200 {
		t.Fatalf("send %q: %d %s", text, code, b)
	}
	return c.ID, string(b)
}

// memoryOf reads key's blocks of the default agent.
func (tm *team) memoryOf(t *testing.T, key string) map[string]agent.MemoryBlock {
	t.Helper()
	var res protocol.MemoryResult
	must(t, key, "GET", tm.p.url("/agentik/memory"), "", &res)
	out := map[string]agent.MemoryBlock{}
	for _, b := range res.Blocks {
		out[b.Label] = b
	}
	return out
}

// TestMemoryCarriesAcrossConversations: the real binary with the fake
// model, on SQLite and PostgreSQL. Ann tells the agent once that she
// prefers short answers; the model writes it with memory_append (the turn
// shows a memory_updated event); her next conversation's system prompt
// holds it, Bob's never does, nor can Bob read or revert it. Reverting
// the change removes it from the next prompt; a PUT puts text back and
// clearing removes it. A memory_append past the block's limit is an error
// result the model reads, the block unchanged.
func TestMemoryCarriesAcrossConversations(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "agentik.db")
			if backend == "postgres" {
				db = freshSchema(t)
			}
			memoryCarries(t, startTeam(t, db))
		})
	}
}

func memoryCarries(t *testing.T, tm *team) {
	const fact = "prefers short answers"
	u := tm.p.url
	_, stream := tm.send(t, tm.ann.key, `I like it short [[tool=memory_append args={"label":"human","text":"`+fact+`"}]]`)
	var change agent.MemoryChange
	for _, line := range strings.Split(stream, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev agent.Event
		if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == agent.EventMemoryUpdated && ev.Memory != nil {
			change = *ev.Memory
		}
	}
	if change.ID == "" || change.Label != "human" || change.Value != fact || change.Op != agent.MemoryOpAppend ||
		!strings.Contains(change.Summary, fact) {
		t.Fatalf("the turn showed no memory_updated event of the append: %+v\n%s", change, stream)
	}
	if !strings.Contains(stream, "tool said: memory updated: added") {
		t.Errorf("the model did not read the tool's result:\n%s", stream)
	}

	// The next conversation knows it; Bob's does not, and Bob sees none of it.
	tm.send(t, tm.ann.key, "how are you")
	if sys := memorySystem(t, tm.fake, "how are you"); !strings.Contains(sys, fact) || !strings.Contains(sys, `<block label="human"`) {
		t.Errorf("ann's next system prompt lacks her memory: %q", sys)
	}
	tm.send(t, tm.bob.key, "bob asks")
	if sys := memorySystem(t, tm.fake, "bob asks"); strings.Contains(sys, fact) {
		t.Errorf("bob's system prompt holds ann's memory: %q", sys)
	}
	if b := tm.memoryOf(t, tm.bob.key); b["human"].Value != "" {
		t.Errorf("bob reads human %q", b["human"].Value)
	}
	if b := tm.memoryOf(t, tm.admin); b["human"].Value != "" {
		t.Errorf("the admin reads human %q: memory is personal", b["human"].Value)
	}
	var changes protocol.MemoryChangesResult
	must(t, tm.bob.key, "GET", u("/agentik/memory/changes"), "", &changes)
	if len(changes.Changes) != 0 {
		t.Errorf("bob lists ann's changes: %+v", changes)
	}
	if code, b := call(t, tm.bob.key, "POST", u("/agentik/memory/changes/"+change.ID+"/revert"), ""); code != 404 {
		t.Errorf("bob reverts ann's change: %d %s, want 404", code, b)
	}

	// Revert: gone from the next prompt; a second revert is a conflict.
	var reverted protocol.MemoryWriteResult
	must(t, tm.ann.key, "POST", u("/agentik/memory/changes/"+change.ID+"/revert"), "", &reverted)
	if reverted.Value != "" || reverted.Change.Reverts != change.ID {
		t.Errorf("revert: %+v", reverted)
	}
	if code, b := call(t, tm.ann.key, "POST", u("/agentik/memory/changes/"+change.ID+"/revert"), ""); code != 409 {
		t.Errorf("a second revert: %d %s, want 409", code, b)
	}
	tm.send(t, tm.ann.key, "after the revert")
	if sys := memorySystem(t, tm.fake, "after the revert"); strings.Contains(sys, fact) || strings.Contains(sys, "<memory>") {
		t.Errorf("the reverted memory is still in the prompt: %q", sys)
	}

	// Edit, then clear.
	must(t, tm.ann.key, "PUT", u("/agentik/memory/human"), `{"value":"writes Go"}`, nil)
	tm.send(t, tm.ann.key, "after the edit")
	if sys := memorySystem(t, tm.fake, "after the edit"); !strings.Contains(sys, "writes Go") {
		t.Errorf("the edited memory is not in the prompt: %q", sys)
	}
	must(t, tm.ann.key, "DELETE", u("/agentik/memory/human"), "", nil)
	tm.send(t, tm.ann.key, "after the clear")
	if sys := memorySystem(t, tm.fake, "after the clear"); strings.Contains(sys, "writes Go") {
		t.Errorf("the cleared memory is still in the prompt: %q", sys)
	}
	if b := tm.memoryOf(t, tm.ann.key); b["human"].Value != "" {
		t.Errorf("human after the clear: %q", b["human"].Value)
	}

	// Past the limit: the model reads an error, the block is unchanged.
	must(t, tm.ann.key, "PUT", u("/agentik/memory/persona"), `{"value":"terse","limit":20}`, nil)
	_, stream = tm.send(t, tm.ann.key, `be verbose [[tool=memory_append args={"label":"persona","text":"answers at great length with many details"}]]`)
	if !strings.Contains(stream, `"is_error":true`) || !strings.Contains(stream, "holds at most 20 characters") || strings.Contains(stream, `"memory_updated"`) {
		t.Errorf("an append past the limit was not an error result the model reads:\n%s", stream)
	}
	if b := tm.memoryOf(t, tm.ann.key); b["persona"].Value != "terse" || b["persona"].Limit != 20 {
		t.Errorf("persona after the refused append: %+v", b["persona"])
	}
	if code, b := call(t, tm.ann.key, "PUT", u("/agentik/memory/persona"), `{"value":"this is far more than twenty"}`); code != 400 || !strings.Contains(string(b), "at most 20") {
		t.Errorf("a PUT past the limit: %d %s, want 400", code, b)
	}
}

// TestMemoryExportImport: ann's export carries her memory; imported into a
// fresh server (another database) by its admin, it is the importer's
// memory and reaches the next conversation's prompt; importing it again
// sets nothing. Bob imports ann's export too: it becomes his own, hers is
// unchanged.
func TestMemoryExportImport(t *testing.T) {
	t.Parallel()
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"))
	u := tm.p.url
	must(t, tm.ann.key, "PUT", u("/agentik/memory/human"), `{"value":"prefers short answers"}`, nil)
	must(t, tm.ann.key, "PUT", u("/agentik/memory/projects"), `{"value":"agentik, in Go","limit":500}`, nil)
	tm.converse(t, tm.ann.key, "hello")
	code, export := call(t, tm.ann.key, "GET", u("/agentik/export"), "")
	if code != 200 {
		t.Fatalf("export: %d %s", code, export)
	}
	var a agent.Archive
	if err := json.Unmarshal(export, &a); err != nil {
		t.Fatalf("export is not JSON: %v\n%s", err, export)
	}
	if len(a.Conversations) != 1 || len(a.Memory) != 2 || a.Memory[0].Agent != agent.DefaultAgent {
		t.Fatalf("export: %d conversations, memory %+v", len(a.Conversations), a.Memory)
	}

	// A fresh server: its admin imports ann's file.
	fresh := startTeam(t, filepath.Join(t.TempDir(), "fresh.db"))
	var res agent.ImportResult
	must(t, fresh.admin, "POST", fresh.p.url("/agentik/import"), string(export), &res)
	if len(res.Conversations) != 1 || res.Memory != 2 {
		t.Fatalf("import: %+v", res)
	}
	got := fresh.memoryOf(t, fresh.admin)
	if got["human"].Value != "prefers short answers" || got["projects"].Value != "agentik, in Go" || got["projects"].Limit != 500 {
		t.Errorf("imported memory %+v", got)
	}
	fresh.send(t, fresh.admin, "after the import")
	if sys := memorySystem(t, fresh.fake, "after the import"); !strings.Contains(sys, "prefers short answers") || !strings.Contains(sys, `<block label="projects"`) {
		t.Errorf("the imported memory is not in the prompt: %q", sys)
	}
	res = agent.ImportResult{}
	must(t, fresh.admin, "POST", fresh.p.url("/agentik/import"), string(export), &res)
	if len(res.Conversations) != 0 || res.Memory != 0 {
		t.Errorf("a second import: %+v, want nothing new", res)
	}

	// Bob imports ann's export on her server: his own memory.
	res = agent.ImportResult{}
	must(t, tm.bob.key, "POST", u("/agentik/import"), string(export), &res)
	if res.Memory != 2 || tm.memoryOf(t, tm.bob.key)["human"].Value != "prefers short answers" {
		t.Errorf("bob's import: %+v", res)
	}
	// A bad block changes nothing: not the memory, not the conversations.
	bad := strings.Replace(string(export), `"label":"projects"`, `"label":"Not A Label"`, 1)
	if code, b := call(t, tm.admin, "POST", u("/agentik/import"), bad); code != 400 || !strings.Contains(string(b), "memory[") {
		t.Errorf("a bad memory block: %d %s, want 400 naming it", code, b)
	}
	var list struct{ Total int }
	must(t, tm.admin, "GET", u("/agentik/conversations"), "", &list)
	if list.Total != 2 { // ann's and bob's imported copy
		t.Errorf("after the refused import the admin lists %d conversations, want 2", list.Total)
	}
}
