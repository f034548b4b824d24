//go:build unix

package tool

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
)

// TestEverythingResourcesAndPrompts lists, reads and expands the
// resources and prompts of server-everything (stdio, node directly).
func TestEverythingResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	_, entry := everything(t)
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"everything":{"command":"node","args":["`+entry+`","stdio"]}}}`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	m := start(t, cfg, Options{})
	ctx := t.Context()

	list, err := m.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.Resources, func(r agent.Resource) bool { return strings.HasSuffix(r.URI, "/architecture.md") })
	if i < 0 {
		t.Fatalf("no architecture.md among %d resources: %+v", len(list.Resources), list.Resources)
	}
	doc := list.Resources[i]
	if doc.Server != "everything" || doc.MimeType != "text/markdown" || doc.Name == "" {
		t.Errorf("resource = %+v", doc)
	}
	if !slices.ContainsFunc(list.Templates, func(tm agent.ResourceTemplate) bool {
		return tm.URITemplate == "demo://resource/dynamic/text/{resourceId}"
	}) {
		t.Errorf("templates %+v lack demo://resource/dynamic/text/{resourceId}", list.Templates)
	}

	read, err := m.ReadResource(ctx, "everything", doc.URI)
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "Architecture") {
		t.Errorf("read = %+v", read)
	}
	// A template's resource reads too.
	if read, err := m.ReadResource(ctx, "everything", "demo://resource/dynamic/text/7"); err != nil || !strings.Contains(read.Contents[0].Text, "Resource 7") {
		t.Errorf("dynamic text 7 = %+v, %v", read, err)
	}
	code := func(err error) string {
		var e *agent.Error
		if !errors.As(err, &e) {
			return "not an agent error: " + err.Error()
		}
		return e.Code + ": " + e.Message
	}
	if _, err := m.ReadResource(ctx, "nosuch", doc.URI); !strings.HasPrefix(code(err), "not_found") || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("unknown server: %v", err)
	}
	if _, err := m.ReadResource(ctx, "everything", "demo://nothing/here"); !strings.HasPrefix(code(err), "not_found") {
		t.Errorf("unknown resource: %s", code(err))
	}

	prompts, err := m.Prompts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j := slices.IndexFunc(prompts, func(p agent.Prompt) bool { return p.Name == "args-prompt" })
	if j < 0 {
		t.Fatalf("no args-prompt among %+v", prompts)
	}
	if a := prompts[j].Arguments; len(a) != 2 || a[0].Name != "city" || !a[0].Required || a[1].Required {
		t.Errorf("args-prompt arguments = %+v", a)
	}
	got, err := m.Prompt(ctx, "everything", "args-prompt", map[string]string{"city": "Lyon", "state": "Rhône"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 1 || got.Messages[0].Role != "user" || got.Messages[0].Content[0].Body != "What's weather in Lyon, Rhône?" {
		t.Errorf("args-prompt = %+v", got)
	}
	res, err := m.Prompt(ctx, "everything", "resource-prompt", map[string]string{"resourceType": "Text", "resourceId": "3"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Messages, func(pm agent.PromptMessage) bool {
		return len(pm.Content) == 1 && pm.Content[0].Type == agent.ContentResource && pm.Content[0].URI == "demo://resource/dynamic/text/3"
	}) {
		t.Errorf("resource-prompt = %+v", res)
	}
	if _, err := m.Prompt(ctx, "everything", "args-prompt", map[string]string{"state": "Rhône"}); !strings.HasPrefix(code(err), "bad_request") || !strings.Contains(err.Error(), `"city"`) {
		t.Errorf("missing city: %s", code(err))
	}
	if _, err := m.Prompt(ctx, "everything", "args-prompt", map[string]string{"city": "x", "country": "y"}); !strings.HasPrefix(code(err), "bad_request") || !strings.Contains(err.Error(), `"country"`) {
		t.Errorf("unknown argument: %s", code(err))
	}
	if _, err := m.Prompt(ctx, "everything", "nosuch-prompt", nil); !strings.HasPrefix(code(err), "not_found") || !strings.Contains(err.Error(), `"nosuch-prompt"`) {
		t.Errorf("unknown prompt: %s", code(err))
	}
}

// TestEverythingResourceSubscription subscribes to a resource of
// server-everything and turns on its simulated updates (the tool sends
// one at once): the update reaches OnResourceUpdated; after a kill -9 the
// Manager subscribes again by itself.
func TestEverythingResourceSubscription(t *testing.T) {
	t.Parallel()
	_, entry := everything(t)
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"everything":{"command":"node","args":["`+entry+`","stdio"]}}}`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	updates := make(chan string, 16)
	m := start(t, cfg, Options{RestartBackoff: 50 * time.Millisecond, OnResourceUpdated: func(server, uri string) {
		select {
		case updates <- server + " " + uri:
		default:
		}
	}})
	const uri = "demo://resource/dynamic/text/1"
	if err := m.Subscribe(t.Context(), "everything", uri); err != nil {
		t.Fatal(err)
	}
	next := func(when string) {
		t.Helper()
		select {
		case got := <-updates:
			if got != "everything "+uri {
				t.Errorf("%s: update of %q", when, got)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no resources/updated", when)
		}
	}
	mustCall(t, m, "everything__toggle-subscriber-updates", "{}")
	next("subscribed")

	pgid := sessionPID(m, "everything")
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "a new process", func() bool { p := sessionPID(m, "everything"); return p != 0 && p != pgid })
	for len(updates) > 0 {
		<-updates
	}
	mustCall(t, m, "everything__toggle-subscriber-updates", "{}") // a new process: on again
	next("after the restart")
	if err := m.Subscribe(t.Context(), "nosuch", uri); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("subscribe on an unknown server: %v", err)
	}
}
