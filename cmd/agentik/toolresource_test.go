package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestEverythingToolResourcesInBrowser runs the real binary with
// server-everything and a headless Chromium on its UI. One round calls
// get-resource-links (two resource_link blocks) and get-resource-reference
// (an embedded text resource): the model reads what they are (names, URIs,
// the embedded text) in the tool results; the tool cards show a chip per
// resource, live and after a reload; a chip opens the resource as the
// server reads it now (a blob gets a download link), and its attach button
// puts it in the composer's tray, so the next message carries it.
func TestEverythingToolResourcesInBrowser(t *testing.T) {
	t.Parallel()
	p, fake := startEverything(t)
	var c agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &c)

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium")), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900))
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// Each step is bounded by the suite's one bound of a wait
	// (testwait.Timeout), not the whole test: a private 120 s for every
	// step together ran out under a loaded CI machine's parallel tests.
	if err := chromedp.Do(bctx); err != nil { // the browser, for the steps' contexts
		t.Fatal(err)
	}
	step := func() context.Context {
		ctx, cancel := context.WithTimeout(bctx, testwait.Timeout)
		t.Cleanup(cancel)
		return ctx
	}
	wait := func(what, expr string) {
		t.Helper()
		if err := chromedp.Do(step(), chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(testwait.Timeout))); err != nil {
			body, _ := chromedp.Run(step(), chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("waiting for %s: %v\npage:\n%s\nlogs:\n%s", what, err, tail(body, 3000), tail(p.logs.String(), 3000))
		}
	}
	run := func(js string) {
		t.Helper()
		if err := chromedp.Do(step(), chromedp.Evaluate[chromedp.Void](js)); err != nil {
			t.Fatalf("%s: %v", js, err)
		}
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(step(), chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		dir := os.Getenv("AGENTIK_SCREENSHOTS")
		if dir == "" {
			dir = t.TempDir()
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(step(), chromedp.Navigate(p.url("/c/"+c.ID))); err != nil {
		t.Fatal(err)
	}
	wait("the page online", `document.getElementById("connection")?.dataset.state === "online"`)

	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{
		{ID: "call_links", Name: "everything__get-resource-links", Arguments: `{"count":2}`},
		{ID: "call_ref", Name: "everything__get-resource-reference", Arguments: `{"resourceType":"Text","resourceId":4}`},
	}})
	fake.Enqueue(llmtest.Reply{Text: "Here they are."})
	resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"links please"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	const links = `document.querySelector('[data-call-id="call_links"] [data-testid="tool-resources"]')`
	const ref = `document.querySelector('[data-call-id="call_ref"] [data-testid="tool-resources"]')`
	chips := func(box string) string {
		return `[...(` + box + `?.querySelectorAll('[data-testid="resource-chip"]') ?? [])].map((c) => c.textContent.trim() + ' ' + c.dataset.resource).join(' | ')`
	}
	wantLinks := "Blob Resource 1 demo://resource/dynamic/blob/1 | Text Resource 2 demo://resource/dynamic/text/2"
	wantRef := "demo://resource/dynamic/text/4 demo://resource/dynamic/text/4"
	check := func(when string) {
		t.Helper()
		wait("the answer ("+when+")", `[...document.querySelectorAll('#messages [data-type="assistant_message"]')].some((m) => m.textContent.includes('Here they are.'))`)
		var got [2]string
		for i, box := range []string{links, ref} {
			var err error
			if got[i], err = chromedp.Run(step(), chromedp.Evaluate[string](chips(box))); err != nil {
				t.Fatal(err)
			}
		}
		if got[0] != wantLinks || got[1] != wantRef {
			t.Errorf("%s: chips\n%q\n%q\nwant\n%q\n%q", when, got[0], got[1], wantLinks, wantRef)
		}
	}
	// The page was open while the turn ran: the cards filled in live (the JS).
	check("live")
	run(`document.querySelectorAll('.tool-details').forEach((d) => { d.open = true }); ` + links + `.scrollIntoView({block: 'center'})`)
	shot("tool-resources-live.png")

	// What the model read of them.
	var tools []string
	for _, r := range fake.Requests() { // the round after the tools (a title's request has none)
		for _, m := range r.Messages {
			if m.Role == "tool" {
				tools = append(tools, m.Content)
			}
		}
	}
	all := strings.Join(tools, "\n")
	for _, want := range []string{
		`[resource link "Text Resource 2": demo://resource/dynamic/text/2 (text/plain) — Resource 2: plaintext resource]`,
		`[resource link "Blob Resource 1": demo://resource/dynamic/blob/1 (text/plain) — Resource 1: plaintext resource]`,
		"[resource demo://resource/dynamic/text/4 (text/plain)]\nResource 4: This is a plaintext resource",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the model's tool results lack %q:\n%s", want, all)
		}
	}

	// A server-rendered page shows the same chips.
	if err := chromedp.Do(step(), chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	wait("the page online again", `document.getElementById("connection")?.dataset.state === "online"`)
	run(`document.querySelectorAll('.tool-details').forEach((d) => { d.open = true })`)
	check("after a reload")

	// A chip opens the resource as the server reads it now; a blob gets
	// a download link.
	const dialog = `document.querySelector('[data-testid="resource-dialog"]')`
	run(links + `.querySelector('[data-resource$="/text/2"]').click()`)
	wait("the text resource", dialog+`?.open && `+dialog+`.querySelector('[data-testid="resource-text"]').textContent.startsWith('Resource 2: This is a plaintext resource')`)
	shot("tool-resource-view.png")
	// Closed and another chip clicked at once (the close event comes a
	// task later): the dialog shows the one clicked.
	run(dialog + `.close(); ` + links + `.querySelector('[data-resource$="/blob/1"]').click()`)
	wait("the blob's download link", dialog+`?.open && `+dialog+`.querySelector('[data-testid="resource-download"]')?.getAttribute('download') === '1'`)
	run(dialog + `.close()`)

	// Attach puts it in the tray; sending carries it: the model reads it.
	run(links + `.querySelector('[data-testid="resource-attach"][data-resource$="/text/2"]').click()`)
	wait("the resource in the tray", `document.querySelector('[data-testid="resource-attachment"]')?.dataset.uri === 'demo://resource/dynamic/text/2' && document.activeElement?.id === 'prompt'`)
	shot("tool-resource-attached.png")
	fake.Enqueue(llmtest.Reply{Text: "Read it."})
	run(`(() => { const p = document.querySelector('#prompt'); p.value = 'summarize this'; p.dispatchEvent(new Event('input')); p.form.requestSubmit(); })()`)
	wait("the second answer", `[...document.querySelectorAll('#messages [data-type="assistant_message"]')].some((m) => m.textContent.includes('Read it.'))`)
	var user string
	for _, r := range fake.Requests() {
		for _, m := range r.Messages {
			if m.Role == "user" && strings.Contains(m.Content, "summarize this") {
				user = m.Content
			}
		}
	}
	if !strings.Contains(user, "summarize this") || !strings.Contains(user, "Resource 2: This is a plaintext resource") {
		t.Errorf("the model's last user message = %q", user)
	}
}
