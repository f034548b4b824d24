package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// Browser end-to-end tests: real headless Chromium against the real server
// and the fake model over HTTP. They skip when no Chromium is installed,
// except under CI, where they fail. AGENTIK_SCREENSHOTS=dir saves the
// screenshots there (docs/screenshots); otherwise they go to a temp dir.

// stepTimeout bounds one browser step; a broken UI fails instead of hanging.
const stepTimeout = 20 * time.Second

func chromiumPath() string {
	if p := os.Getenv("AGENTIK_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is one headless Chromium with a fresh profile.
type browser struct {
	t    testing.TB
	ts   *testServer
	root context.Context
}

func newBrowser(t testing.TB, ts *testServer) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium found: apt-get install -y chromium")
		}
		t.Skip("no Chromium found (apt-get install -y chromium)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 860),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{t: t, ts: ts, root: ctx}
}

// tab opens a new tab in the browser.
func (b *browser) tab() context.Context {
	ctx, cancel := chromedp.NewContext(b.root)
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("open tab: %v", err)
	}
	return ctx
}

// do runs steps with a timeout, failing the test on error.
func do(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JS expression in the tab.
func eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("eval %s: %v", expr, err)
	}
	return v
}

// waitJS waits until a JS expression is truthy.
func waitJS(t testing.TB, ctx context.Context, what, expr string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.Run(c, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// openPage navigates to path and waits until the UI is connected.
func openPage(t testing.TB, ts *testServer, ctx context.Context, path string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(ts.URL+path))
	waitConnected(t, ctx)
}

func waitConnected(t testing.TB, ctx context.Context) {
	t.Helper()
	waitJS(t, ctx, "connected UI", `document.body.dataset.ready === 'true' && document.getElementById('connection')?.dataset.state === 'online' && (!document.querySelector('#main').dataset.conversationId || document.querySelector('#main').dataset.subscribed === 'true')`)
}

// send types a message into the composer and sends it with Enter.
func send(t testing.TB, ctx context.Context, text string) {
	t.Helper()
	js, _ := json.Marshal(text)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const p = document.querySelector('#prompt'); p.focus(); p.value = %s; p.dispatchEvent(new Event('input')); })()`, js)))
	do(t, ctx, press("Enter", 0))
}

// press sends one key the way a keyboard does (keyDown carrying the text,
// then keyUp), so a keydown handler's preventDefault works as in real use.
func press(key string, modifiers int64) chromedp.Action[chromedp.Void] {
	code, text := map[string]int64{"Enter": 13, "Escape": 27}[key], map[string]string{"Enter": "\r"}[key]
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: key, Code: key, WindowsVirtualKeyCode: code, NativeVirtualKeyCode: code, Text: text, UnmodifiedText: text, Modifiers: modifiers}
		if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := down
		up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
		_, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, up)
		return err
	})
}

func screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("AGENTIK_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	c, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func darkMode(dark bool) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		v := "light"
		if dark {
			v = "dark"
		}
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}},
		})
		return err
	})
}

// fakeTools is one MCP-like tool for the browser tests.
type fakeTools struct{}

func (fakeTools) Specs() []agent.ToolSpec {
	return []agent.ToolSpec{{Name: "weather__forecast", Description: "Weather forecast for a city",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}`)}}
}

func (fakeTools) Call(_ context.Context, name, args string) (string, error) {
	var a struct{ City string }
	if err := json.Unmarshal([]byte(args), &a); err != nil || a.City == "" {
		return "", fmt.Errorf("city is required")
	}
	return fmt.Sprintf(`{"city":%q,"forecast":[{"day":"Mon","high_c":21,"sky":"sunny"},{"day":"Tue","high_c":18,"sky":"showers"}]}`, a.City), nil
}

func (fakeTools) Servers() []agent.ToolServer {
	return []agent.ToolServer{
		{Name: "weather", Transport: "stdio", State: agent.ToolServerReady, Tools: []string{"weather__forecast"}},
		{Name: "files", Transport: "http", State: agent.ToolServerReady, Tools: []string{"files__read", "files__list", "files__search"}},
	}
}

func withTools() rigOption {
	return func(a *agent.Config, s *server.Config) { a.Tools, s.Tools = fakeTools{}, fakeTools{} }
}

const (
	jsAnswers   = `document.querySelectorAll('#messages [data-type="assistant_message"]')`
	jsStreaming = `document.querySelector('#live [data-testid="streaming"] .md')`
)

// tokens is what the fake model answers to [[tokens=n]].
func tokens(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("t%d", i+1)
	}
	return strings.Join(w, " ")
}

// answerText is the text of the i-th persisted answer.
func answerText(t testing.TB, ctx context.Context, i int) string {
	t.Helper()
	return strings.TrimSpace(eval[string](t, ctx, fmt.Sprintf(jsAnswers+`[%d]?.querySelector('.md').textContent ?? ''`, i)))
}

func conversationID(t testing.TB, ctx context.Context) string {
	t.Helper()
	waitJS(t, ctx, "conversation URL", `location.pathname.startsWith('/c/')`)
	return strings.TrimPrefix(eval[string](t, ctx, `location.pathname`), "/c/")
}

func TestBrowserStreamsAnswer(t *testing.T) {
	ts := newTestServer(t)
	tab := newBrowser(t, ts).tab()
	openPage(t, ts, tab, "/")

	// Shift+Enter adds a line instead of sending.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('#prompt').focus()`), press("Enter", 8))
	if got := eval[string](t, tab, `document.querySelector('#prompt').value`); got != "\n" {
		t.Errorf("after Shift+Enter the prompt is %q, want a new line", got)
	}

	send(t, tab, "[[tokens=120 delay=15ms]]")
	id := conversationID(t, tab)
	waitJS(t, tab, "streamed text", jsStreaming+`?.textContent.includes('t10 ')`)
	if eval[bool](t, tab, jsAnswers+`.length > 0`) {
		t.Error("the answer was persisted before it streamed")
	}
	if !eval[bool](t, tab, `!document.querySelector('[data-testid="stop"]').hidden && document.querySelector('[data-testid="send"]').hidden`) {
		t.Error("Stop is not offered while answering")
	}
	waitJS(t, tab, "persisted answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if got := answerText(t, tab, 0); got != tokens(120) {
		t.Errorf("answer = %q", got)
	}
	if got := eval[string](t, tab, jsAnswers+`[0].querySelector('[data-testid="usage"]')?.textContent ?? ''`); !strings.Contains(got, "tokens") {
		t.Errorf("usage = %q", got)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('#messages [data-type="user_message"]').length`); n != 1 {
		t.Errorf("user messages = %d, want 1 (pending echo replaced)", n)
	}
	if !eval[bool](t, tab, `document.querySelector('[data-testid="conversation-item"][data-id="`+id+`"] a[aria-current="page"]') !== null`) {
		t.Error("the new conversation is not the current sidebar item")
	}
	waitJS(t, tab, "send button back", `document.querySelector('[data-testid="stop"]').hidden && !document.querySelector('[data-testid="send"]').hidden`)
}

func TestBrowserReloadMidStream(t *testing.T) {
	ts := newTestServer(t)
	tab := newBrowser(t, ts).tab()
	openPage(t, ts, tab, "/")
	send(t, tab, "[[tokens=200 delay=15ms]]")
	id := conversationID(t, tab)
	waitJS(t, tab, "streamed text", jsStreaming+`?.textContent.includes('t30 ')`)

	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if got := eval[string](t, tab, `document.querySelector('#main').dataset.conversationId`); got != id {
		t.Fatalf("after reload the page shows %q, want %q", got, id)
	}
	// The turn so far is replayed from turn_seq: the in-progress answer
	// starts at the first token, not where the reload happened.
	waitJS(t, tab, "rebuilt in-progress answer", jsStreaming+`?.textContent.startsWith('t1 t2 t3 ')`)
	waitJS(t, tab, "persisted answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if got := answerText(t, tab, 0); got != tokens(200) {
		t.Errorf("after a reload mid-stream the answer is %q, want t1…t200 exactly once", got)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('#messages > [data-type="user_message"]').length`); n != 1 {
		t.Errorf("user messages = %d, want 1", n)
	}
	if n := eval[int](t, tab, `new Set([...document.querySelectorAll('#messages [data-id]')].map(e => e.dataset.id)).size === document.querySelectorAll('#messages [data-id]').length ? 0 : 1`); n != 0 {
		t.Error("a message is on the page twice")
	}

	// Reload again once idle: the server-rendered history is the same.
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	waitJS(t, tab, "rendered history", `document.querySelector('#main').dataset.rendered === 'true'`)
	if got := answerText(t, tab, 0); got != tokens(200) || eval[int](t, tab, jsAnswers+`.length`) != 1 {
		t.Errorf("history after reload = %q", got)
	}
}

func TestBrowserSecondTabSeesTurnLive(t *testing.T) {
	ts := newTestServer(t)
	br := newBrowser(t, ts)
	c, err := ts.Runner.CreateConversation(context.Background(), "Shared", false)
	if err != nil {
		t.Fatal(err)
	}
	a, b, home := br.tab(), br.tab(), br.tab()
	openPage(t, ts, a, "/c/"+c.ID)
	openPage(t, ts, b, "/c/"+c.ID)
	openPage(t, ts, home, "/")

	send(t, a, "[[tokens=80 delay=20ms]]")
	waitJS(t, b, "live text in the second tab", jsStreaming+`?.textContent.includes('t5 ')`)
	waitJS(t, home, "running indicator in another tab's sidebar", `document.querySelector('[data-testid="conversation-item"][data-id="`+c.ID+`"]')?.dataset.running === 'true'`)
	if !eval[bool](t, b, `!document.querySelector('[data-testid="stop"]').hidden`) {
		t.Error("the second tab offers no Stop during the turn")
	}
	waitJS(t, b, "persisted answer in the second tab", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if got := answerText(t, b, 0); got != tokens(80) {
		t.Errorf("second tab answer = %q", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#messages > [data-type="user_message"]').length`); n != 1 {
		t.Errorf("second tab shows %d user messages, want 1", n)
	}
	waitJS(t, home, "running indicator off", `document.querySelector('[data-testid="conversation-item"][data-id="`+c.ID+`"]')?.dataset.running === 'false'`)

	// A conversation created, renamed and deleted elsewhere follows live.
	c2, err := ts.Runner.CreateConversation(context.Background(), "From the API", false)
	if err != nil {
		t.Fatal(err)
	}
	item := `document.querySelector('[data-testid="conversation-item"][data-id="` + c2.ID + `"]')`
	waitJS(t, home, "created conversation in the sidebar", item+`?.textContent.includes('From the API')`)
	if _, err := ts.Runner.Rename(context.Background(), c2.ID, "Renamed elsewhere"); err != nil {
		t.Fatal(err)
	}
	waitJS(t, home, "renamed conversation", item+`?.textContent.includes('Renamed elsewhere')`)
	if err := ts.Runner.Delete(context.Background(), c2.ID); err != nil {
		t.Fatal(err)
	}
	waitJS(t, home, "deleted conversation gone", item+` === null`)
}

func TestBrowserStop(t *testing.T) {
	ts := newTestServer(t)
	tab := newBrowser(t, ts).tab()
	openPage(t, ts, tab, "/")
	send(t, tab, "[[tokens=2000 delay=20ms]]")
	id := conversationID(t, tab)
	waitJS(t, tab, "streamed text", jsStreaming+`?.textContent.includes('t5 ')`)
	do(t, tab, press("Escape", 0))
	waitJS(t, tab, "interrupted answer", jsAnswers+`.length === 1 && `+jsAnswers+`[0].querySelector('[data-testid="interrupted"]') !== null`)
	waitJS(t, tab, "idle composer", `document.querySelector('[data-testid="stop"]').hidden && !document.querySelector('[data-testid="send"]').hidden`)
	c := waitIdle(t, ts, id)
	if c.Running {
		t.Error("the conversation still runs after Stop")
	}
	if got := answerText(t, tab, 0); strings.Contains(got, "t2000") || !strings.HasPrefix(got, "t1 t2 t3") {
		t.Errorf("interrupted answer = %q", got)
	}
}

func TestBrowserToolCard(t *testing.T) {
	ts := newTestServer(t, withTools())
	tab := newBrowser(t, ts).tab()
	openPage(t, ts, tab, "/")
	if got := eval[string](t, tab, `document.querySelector('[data-testid="tool-servers"] .tools-count').textContent`); got != "2/2 ready" {
		t.Errorf("tool servers = %q", got)
	}
	send(t, tab, `Weather? [[tool=weather__forecast args={"city":"Paris","days":2}]]`)
	card := `document.querySelector('#messages [data-testid="tool-card"]')`
	waitJS(t, tab, "tool card with result", card+`?.querySelector('[data-testid="tool-result"]')?.textContent.includes('showers')`)
	waitJS(t, tab, "final answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	check := func(when string) {
		if n := eval[int](t, tab, `document.querySelectorAll('[data-testid="tool-card"]').length`); n != 1 {
			t.Errorf("%s: %d tool cards, want 1", when, n)
		}
		if got := eval[string](t, tab, card+`.querySelector('[data-testid="tool-name"]').textContent`); got != "weather__forecast" {
			t.Errorf("%s: tool name = %q", when, got)
		}
		if got := eval[string](t, tab, card+`.querySelector('[data-testid="tool-arguments"]').textContent`); got != "{\n  \"city\": \"Paris\",\n  \"days\": 2\n}" {
			t.Errorf("%s: arguments = %q", when, got)
		}
		if got := eval[string](t, tab, card+`.dataset.state`); got != "done" {
			t.Errorf("%s: card state = %q", when, got)
		}
		if got := answerText(t, tab, 0); !strings.Contains(got, "tool said:") {
			t.Errorf("%s: answer = %q", when, got)
		}
	}
	check("live")
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	check("after reload")
}
