package server_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// fakeMCP is the resources and prompts of one tool server, shaped like
// server-everything's (the real one is checked in cmd/agentik).
type fakeMCP struct{}

// fakeDocVersion is bumped to change the document (a resource update).
var fakeDocVersion atomic.Int32

const fakeDoc = "# Architecture\nThe everything server registers tools, prompts and resources."

func (fakeMCP) Resources(context.Context) (agent.ResourceList, error) {
	return agent.ResourceList{
		Resources: []agent.Resource{
			{Server: "weather", URI: "demo://resource/static/document/architecture.md", Name: "architecture.md", MimeType: "text/markdown"},
			{Server: "weather", URI: "demo://resource/static/document/features.md", Name: "features.md", MimeType: "text/markdown"},
		},
		Templates: []agent.ResourceTemplate{{Server: "weather", URITemplate: "demo://resource/dynamic/text/{resourceId}", Name: "Dynamic Text Resource"}},
	}, nil
}

func (fakeMCP) ReadResource(_ context.Context, server, uri string) (agent.ResourceRead, error) {
	if server != "weather" {
		return agent.ResourceRead{}, agent.Errorf(agent.CodeNotFound, "tool server %q not found", server)
	}
	text := fakeDoc
	if v := fakeDocVersion.Load(); v > 0 {
		text += fmt.Sprintf("\n(version %d)", v)
	}
	if id, ok := strings.CutPrefix(uri, "demo://resource/dynamic/text/"); ok {
		text = "Resource " + id + ": This is a plaintext resource"
	}
	return agent.ResourceRead{Server: server, URI: uri, Contents: []agent.ResourceContents{{URI: uri, MimeType: "text/markdown", Text: text}}}, nil
}

func (fakeMCP) Subscribe(context.Context, string, string) error { return nil }

func (fakeMCP) Prompts(context.Context) ([]agent.Prompt, error) {
	return []agent.Prompt{
		{Server: "weather", Name: "simple-prompt", Title: "Simple Prompt", Description: "A prompt with no arguments", Arguments: []agent.PromptArgument{}},
		{Server: "weather", Name: "args-prompt", Title: "Arguments Prompt", Description: "A prompt with two arguments, one required and one optional",
			Arguments: []agent.PromptArgument{{Name: "city", Description: "Name of the city", Required: true}, {Name: "state", Description: "Name of the state"}}},
	}, nil
}

func (fakeMCP) Prompt(_ context.Context, server, name string, args map[string]string) (agent.PromptResult, error) {
	switch name {
	case "simple-prompt":
		return agent.PromptResult{Server: server, Name: name, Messages: []agent.PromptMessage{{Role: "user", Content: []agent.Content{agent.Text("This is a simple prompt without arguments.")}}}}, nil
	case "args-prompt":
		if args["city"] == "" {
			return agent.PromptResult{}, agent.Errorf(agent.CodeBadRequest, "prompt %q needs argument %q (Name of the city)", name, "city")
		}
		loc := args["city"]
		if args["state"] != "" {
			loc += ", " + args["state"]
		}
		return agent.PromptResult{Server: server, Name: name, Messages: []agent.PromptMessage{{Role: "user", Content: []agent.Content{agent.Text(fmt.Sprintf("What's weather in %s?", loc))}}}}, nil
	}
	return agent.PromptResult{}, agent.Errorf(agent.CodeNotFound, "prompt %q not found", name)
}

func withMCP() rigOption {
	return func(a *agent.Config, s *server.Config) {
		a.Tools, a.ContentTools, s.Tools, s.ToolsFor = fakeTools{}, nil, fakeTools{}, nil
		a.Resources, a.Prompts = fakeMCP{}, fakeMCP{}
	}
}

// TestBrowserPromptMenuAndResource types "/" in the composer, picks a
// prompt with an argument from the menu, fills its form (a missing
// required argument is refused, the form stays), then attaches a resource
// from the attach menu and sends: the model reads the resource's text, the
// message shows a chip for it, live and after a reload.
func TestBrowserPromptMenuAndResource(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withMCP())
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	const menu = `document.querySelector('[data-testid="mcp-menu"]')`
	typeIn := func(v string) {
		do(t, tab, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const p = document.querySelector('#prompt'); p.focus(); p.value = %q; p.dispatchEvent(new Event('input')); })()`, v)))
	}

	typeIn("/")
	waitJS(t, tab, "the prompt menu", menu+`?.hidden === false && `+menu+`.querySelectorAll('[data-testid="prompt-item"]').length === 2`)
	typeIn("/arg")
	waitJS(t, tab, "the menu filtered to args-prompt", menu+`.querySelectorAll('[data-testid="prompt-item"]').length === 1 && `+menu+`.querySelector('[data-testid="prompt-item"]').dataset.name === 'args-prompt'`)
	if dir := os.Getenv("AGENTIK_SCREENSHOTS"); dir != "" {
		screenshot(t, tab, "prompt-menu.png")
	}
	do(t, tab, press("Enter", 0)) // picks the active item
	waitJS(t, tab, "the arguments form", menu+`.querySelector('[data-testid="prompt-form"]') && document.activeElement?.name === 'city'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](menu+`.querySelector('[data-testid="prompt-insert"]').click()`))
	waitJS(t, tab, "the refusal naming city", menu+`.querySelector('[data-testid="prompt-error"]')?.hidden === false && `+menu+`.querySelector('[data-testid="prompt-error"]').textContent.includes('"city"')`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const f = `+menu+`.querySelector('[data-testid="prompt-form"]'); f.querySelector('[name="city"]').value = 'Lyon'; f.querySelector('[name="state"]').value = 'Rhône'; })()`))
	screenshot(t, tab, "prompt-form.png")
	do(t, tab, chromedp.Evaluate[chromedp.Void](menu+`.querySelector('[data-testid="prompt-insert"]').click()`))
	waitJS(t, tab, "the expanded prompt in the box", `document.querySelector('#prompt').value === "What's weather in Lyon, Rhône?" && `+menu+`.hidden`)

	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="attach-resource"]').click()`))
	waitJS(t, tab, "the resource menu", menu+`?.hidden === false && `+menu+`.querySelectorAll('[data-testid="resource-item"]').length === 2 && `+menu+`.querySelectorAll('[data-testid="template-item"]').length === 1`)
	screenshot(t, tab, "resource-menu.png")
	do(t, tab, chromedp.Evaluate[chromedp.Void](menu+`.querySelector('[data-testid="resource-item"][data-uri$="architecture.md"]').click()`))
	waitJS(t, tab, "the resource in the tray", `document.querySelector('[data-testid="resource-attachment"]')?.textContent.includes('architecture.md')`)
	screenshot(t, tab, "resource-attached.png")
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('#prompt').focus()`))
	do(t, tab, press("Enter", 0))
	const chip = `document.querySelector('#messages [data-type="user_message"] [data-testid="resource-chip"]')`
	waitJS(t, tab, "the answer and the sent message's chip", jsAnswers+`.length === 1 && `+chip+`?.dataset.resource === 'demo://resource/static/document/architecture.md'`)
	var user string
	for _, m := range ts.Fake.Requests()[0].Messages {
		if m.Role == "user" {
			user = m.Content
		}
	}
	if !strings.Contains(user, "What's weather in Lyon, Rhône?") || !strings.Contains(user, fakeDoc) {
		t.Errorf("the model's user message = %q", user)
	}
	screenshot(t, tab, "resource-sent.png")
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if got := eval[string](t, tab, chip+`?.textContent.trim() + ' ' + `+chip+`?.dataset.resource`); got != "architecture.md demo://resource/static/document/architecture.md" {
		t.Errorf("chip after reload = %q", got)
	}

	// The chip opens the resource as it is now; an update of it (the
	// server's resources/updated, published as resource_updated) reads it
	// again and marks the chip.
	const dialog = `document.querySelector('[data-testid="resource-dialog"]')`
	do(t, tab, chromedp.Evaluate[chromedp.Void](chip+`.click()`))
	waitJS(t, tab, "the resource view", dialog+`?.open && `+dialog+`.querySelector('[data-testid="resource-text"]').textContent.startsWith('# Architecture')`)
	fakeDocVersion.Store(2)
	ts.Broker.Publish(agent.ResourceUpdatedEvent("weather", "demo://resource/static/document/architecture.md", time.Now()))
	waitJS(t, tab, "the view read again", dialog+`.querySelector('[data-testid="resource-text"]').textContent.endsWith('(version 2)') && `+chip+`.dataset.updated === 'true'`)
	screenshot(t, tab, "resource-view.png")
}
