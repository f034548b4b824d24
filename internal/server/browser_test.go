package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/testwait"
)

// Browser end-to-end tests: real headless Chromium against the real server
// and the fake model over HTTP. They fail when no Chromium is installed
// (`go tool task test` installs it), unless AGENTIK_TEST_NO_BROWSER is set.
// AGENTIK_SCREENSHOTS=dir saves the screenshots there (docs/screenshots);
// otherwise they go to a temp dir.
//
// The package shares one Chromium process (started by the first test that
// needs it, stopped by TestMain); each test gets its own browser context
// (a fresh profile: no cookies, storage or cache from other tests), so
// browser tests can run in parallel. A new test calls newBrowser(t, ts)
// and opens tabs with tab(), or calls browserTab(t, ts) for one tab.

// stepTimeout bounds one browser step; a broken UI fails instead of
// hanging. It is the suite's one bound of a wait (testwait.Timeout): a
// private 20 s ran out under a loaded CI machine's parallel tests (a
// Chromium tab, server-everything's node and the server under -race
// share two cores with the other packages).
const stepTimeout = testwait.Timeout

func TestMain(m *testing.M) {
	code := m.Run()
	shared.stop()
	os.Exit(code)
}

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

// shared is the package's one Chromium process.
var shared sharedChromium

type sharedChromium struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab; children share its process
	cancel context.CancelFunc
	dir    string
	err    error
}

func (c *sharedChromium) start(path string) {
	c.dir, c.err = os.MkdirTemp("", "agentik-chromium-")
	if c.err != nil {
		return
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(c.dir),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Tabs of parallel tests are all in the background: they must
		// run their timers and animation frames as a visible tab does.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.WindowSize(1280, 860),
		// The app honours prefers-reduced-motion (no animations or
		// transitions): a pulsing dot or a blinking caret no longer
		// repaints a software-composited tab 60 times a second while a
		// test waits. Sixteen browser tests, alternated twice at load
		// 7-20: 48-54 s wall and 23-24 CPU-s against 57-72 s and 24-28.
		chromedp.Flag("force-prefers-reduced-motion", true),
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	c.ctx, c.cancel = ctx, func() { cancel(); cancelAlloc() }
	if err := chromedp.Do(ctx); err != nil {
		c.err = fmt.Errorf("start chromium %s: %w", path, err)
	}
}

func (c *sharedChromium) stop() {
	if c.cancel != nil {
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		_ = chromedp.Cancel(ctx)
		cancel()
		c.cancel()
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// requireChromium fails the test when there is no Chromium (skips it
// when AGENTIK_TEST_NO_BROWSER is set) and returns the running shared
// browser. Call it before any slow setup.
func requireChromium(t testing.TB) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("AGENTIK_TEST_NO_BROWSER") != "" {
			t.Skip("AGENTIK_TEST_NO_BROWSER is set")
		}
		t.Fatal("no Chromium found: run `go tool task test` (it installs it) or apt-get install -y chromium (or set AGENTIK_TEST_NO_BROWSER=1 to skip browser tests)")
	}
	shared.once.Do(func() { shared.start(path) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.ctx
}

// browser is a fresh profile (a browser context) in the shared Chromium.
type browser struct {
	t    testing.TB
	ts   *testServer
	root context.Context
}

// newBrowser opens a fresh profile in the shared Chromium for ts; it is
// closed when the test ends.
func newBrowser(t testing.TB, ts *testServer) *browser {
	t.Helper()
	parent := requireChromium(t)
	ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open browser context: %v", err)
	}
	return &browser{t: t, ts: ts, root: ctx}
}

// browserTab is newBrowser(t, ts).tab(): one tab in a fresh profile.
func browserTab(t testing.TB, ts *testServer) context.Context {
	t.Helper()
	return newBrowser(t, ts).tab()
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
	deadline := time.Now().Add(stepTimeout)
	var err error
	for {
		c, cancel := context.WithDeadline(ctx, deadline)
		_, err = chromedp.Run(c, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		cancel()
		// A navigation (a form's submit, a redirect) destroys the page's
		// JavaScript context under a running poll: poll the new page.
		if err == nil || !navigatedAway(err) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		defer scancel()
		state, _ := chromedp.Run(sctx, chromedp.Evaluate[string](`location.pathname + ' | toasts: ' + (document.getElementById('toasts')?.innerText || '') + ' | ' + document.body.innerText.slice(0, 400) + ' | messages: ' + [...document.querySelectorAll('#messages > *')].map(e => (e.dataset.type || e.className) + '=' + JSON.stringify(e.innerText.slice(0, 80))).join(', ')`))
		t.Fatalf("waiting for %s (%s): %v\npage: %s", what, expr, err, state)
	}
}

// navigatedAway reports an error of a script whose page went away.
func navigatedAway(err error) bool {
	m := err.Error()
	return strings.Contains(m, "Cannot find context with specified id") || strings.Contains(m, "Execution context was destroyed") ||
		strings.Contains(m, "Inspected target navigated or closed")
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

func (fakeTools) Specs(context.Context) []agent.ToolSpec {
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
	return func(a *agent.Config, s *server.Config) {
		a.Tools, a.ContentTools, s.Tools, s.ToolsFor = fakeTools{}, nil, fakeTools{}, nil
	}
}

const (
	jsAnswers   = `document.querySelectorAll('#messages [data-type="assistant_message"]')`
	jsStreaming = `document.querySelector('#live [data-testid="streaming"] .md')`
)

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
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
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
	if got := answerText(t, tab, 0); got != llmtest.Tokens(120) {
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
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	// The answer stops after t31 until the reloaded page has rebuilt it:
	// the turn is still streaming when the page comes back, however slow
	// the machine.
	hold := make(chan struct{})
	ts.Fake.Enqueue(llmtest.Reply{Text: llmtest.Tokens(200), Hold: hold, HoldAfter: 31})
	openPage(t, ts, tab, "/")
	send(t, tab, "talk")
	id := conversationID(t, tab)
	waitJS(t, tab, "streamed text", jsStreaming+`?.textContent.includes('t30 ')`)

	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if got := eval[string](t, tab, `document.querySelector('#main').dataset.conversationId`); got != id {
		t.Fatalf("after reload the page shows %q, want %q", got, id)
	}
	// The turn so far is replayed from turn_seq: the in-progress answer
	// starts at the first token, not where the reload happened.
	waitJS(t, tab, "rebuilt in-progress answer", jsStreaming+`?.textContent.startsWith('t1 t2 t3 ') && `+jsStreaming+`.textContent.includes('t31')`)
	close(hold)
	waitJS(t, tab, "persisted answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if got := answerText(t, tab, 0); got != llmtest.Tokens(200) {
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
	if got := answerText(t, tab, 0); got != llmtest.Tokens(200) || eval[int](t, tab, jsAnswers+`.length`) != 1 {
		t.Errorf("history after reload = %q", got)
	}
}

func TestBrowserSecondTabSeesTurnLive(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	br := newBrowser(t, ts)
	c, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "Shared"})
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
	if got := answerText(t, b, 0); got != llmtest.Tokens(80) {
		t.Errorf("second tab answer = %q", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#messages > [data-type="user_message"]').length`); n != 1 {
		t.Errorf("second tab shows %d user messages, want 1", n)
	}
	waitJS(t, home, "running indicator off", `document.querySelector('[data-testid="conversation-item"][data-id="`+c.ID+`"]')?.dataset.running === 'false'`)

	// A conversation created, renamed and deleted elsewhere follows live.
	c2, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "From the API"})
	if err != nil {
		t.Fatal(err)
	}
	item := `document.querySelector('[data-testid="conversation-item"][data-id="` + c2.ID + `"]')`
	waitJS(t, home, "created conversation in the sidebar", item+`?.textContent.includes('From the API')`)
	if _, err := ts.Convs.Rename(context.Background(), c2.ID, "Renamed elsewhere"); err != nil {
		t.Fatal(err)
	}
	waitJS(t, home, "renamed conversation", item+`?.textContent.includes('Renamed elsewhere')`)
	if err := ts.Runner.Delete(context.Background(), c2.ID); err != nil {
		t.Fatal(err)
	}
	waitJS(t, home, "deleted conversation gone", item+` === null`)
}

func TestBrowserStop(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
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
	t.Parallel()
	ts := newTestServer(t, withTools())
	tab := browserTab(t, ts)
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

func TestBrowserXSSStaysInert(t *testing.T) {
	t.Parallel()
	var remoteHits atomic.Int32
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remoteHits.Add(1)
		t.Logf("remote fetch %s dest=%s", r.URL, r.Header.Get("Sec-Fetch-Dest"))
		w.Header().Set("Content-Type", "image/png")
	}))
	t.Cleanup(remote.Close)
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")

	payload := `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script> ` +
		`[click me](javascript:window.__xss=3) <a href="javascript:window.__xss=4">link</a> ` +
		`<svg onload="window.__xss=5"></svg><iframe srcdoc="<script>parent.__xss=6</script>"></iframe> ` +
		`<form action="javascript:window.__xss=7"><button>go</button></form><div style="position:fixed;inset:0" onclick="window.__xss=8">x</div> ` +
		`![tracker](` + remote.URL + `/pixel.png) <img src="` + remote.URL + `/img.png">`
	send(t, tab, "[[text="+payload+"]]")
	waitJS(t, tab, "persisted answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)

	check := func(when string) {
		t.Helper()
		if got := eval[string](t, tab, `String(window.__xss)`); got != "undefined" {
			t.Errorf("%s: payload ran: window.__xss = %s", when, got)
		}
		bad := eval[[]string](t, tab, `[...document.querySelectorAll('#thread *')].flatMap(el => {
			const out = [];
			if (['SCRIPT','IFRAME','OBJECT','EMBED','FORM','SVG','svg','STYLE'].includes(el.tagName)) out.push('<' + el.tagName + '>');
			for (const a of el.attributes) {
				if (a.name.startsWith('on') || a.name === 'style' || a.name === 'srcdoc') out.push(el.tagName + '[' + a.name + ']');
				if (/^\s*javascript:/i.test(a.value)) out.push(el.tagName + '[' + a.name + '=javascript:]');
			}
			if (el.tagName === 'IMG' && !el.src.startsWith('data:')) out.push('remote img ' + el.src);
			return out;
		}).filter(x => !x.startsWith('svg') && !x.startsWith('<svg'))`)
		if len(bad) > 0 {
			t.Errorf("%s: unsafe markup in the thread: %v", when, bad)
		}
		// Our own icons are SVG; the model's may not be.
		if n := eval[int](t, tab, `document.querySelectorAll('#thread .md svg:not(.icon)').length`); n != 0 {
			t.Errorf("%s: %d SVG elements from model output", when, n)
		}
		if n := eval[int](t, tab, `document.querySelectorAll('#messages [data-type="assistant_message"] a.remote-img').length`); n != 2 {
			t.Errorf("%s: %d remote-image links, want 2", when, n)
		}
		if !eval[bool](t, tab, `[...document.querySelectorAll('#thread .md a[href]')].every(a => a.rel.includes('noopener') && a.target === '_blank')`) {
			t.Errorf("%s: a link opens without noopener", when)
		}
	}
	check("live")
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	waitJS(t, tab, "rendered history", `document.querySelector('#main').dataset.rendered === 'true'`)
	check("after reload")
	// Clicking the neutralized links and the overlay text does nothing.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('#thread .md a:not(.remote-img), #thread .md div').forEach(el => el.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true})))`))
	check("after clicks")
	if n := remoteHits.Load(); n != 0 {
		t.Errorf("remote images were fetched %d times", n)
	}
}

// sendIdle sends a message and waits for the turn to end.
func sendIdle(t testing.TB, ts *testServer, id, text string) {
	t.Helper()
	if _, err := ts.Runner.Start(context.Background(), agent.StartInput{ConversationID: id, Content: []agent.Content{agent.Text(text)}}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, ts, id)
}

// seedConversation makes a conversation of 2·turns messages (markdown
// with a code block and a list) by appending the messages to the store in
// batches: what a long history looks like to the UI, without running
// hundreds of turns.
func seedConversation(t testing.TB, ts *testServer, title string, turns int) string {
	t.Helper()
	c, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: title})
	if err != nil {
		t.Fatal(err)
	}
	seedTurns(t, ts, c.ID, 0, turns)
	return c.ID
}

// seedTurns appends turns question/answer pairs (numbered from first) to
// conversation id through the store, in batches: far faster than real
// turns, whose model calls a test of the history does not need.
func seedTurns(t testing.TB, ts *testServer, id string, first, turns int) {
	t.Helper()
	msg := func(typ, text string) *agent.Record {
		now := time.Now()
		m := agent.Message{Type: typ, ID: agent.NewID(), ConversationID: id, Date: now, Content: []agent.Content{agent.Text(text)}}
		return &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: now, ConversationID: id,
			Event: &agent.Event{Type: agent.EventMessage, Message: &m}}}
	}
	const batch = 100 // turns per Append
	for i := first; i < first+turns; i += batch {
		var recs []*agent.Record
		for j := i; j < min(i+batch, first+turns); j++ {
			recs = append(recs,
				msg(agent.MessageUser, fmt.Sprintf("Question %d: how do I print a number in Go?", j)),
				msg(agent.MessageAssistant, fmt.Sprintf("Step **%d**: use `fmt.Println`.\n\n```go\npackage main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(%d) }\n```\n\n- it prints a newline\n- it returns the byte count", j, j)))
		}
		if err := ts.Store.Append(context.Background(), recs...); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBrowserLongConversationOpens(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	br := newBrowser(t, ts)
	// Two hundred messages: a history many screens long (seeding more only
	// costs time under -race). How long five hundred take to open is
	// BenchmarkBrowserOpenLongConversation's business.
	id := seedConversation(t, ts, "Two hundred messages", 100)
	tab := br.tab()
	openPage(t, ts, tab, "/c/"+id)
	waitJS(t, tab, "all markdown rendered", `document.querySelector('#main').dataset.rendered === 'true'`)
	if n := eval[int](t, tab, `document.querySelectorAll('#messages > article').length`); n != 200 {
		t.Fatalf("rendered %d messages, want 200", n)
	}
	if !eval[bool](t, tab, `(() => { const s = document.querySelector('#scroller'); return s.scrollHeight - s.scrollTop - s.clientHeight < 100; })()`) {
		t.Error("a long conversation does not open scrolled to the latest message")
	}
	if n := eval[int](t, tab, `document.querySelectorAll('#messages [data-type="assistant_message"] .code-block .hljs').length`); n != 100 {
		t.Errorf("highlighted code blocks = %d, want 100", n)
	}
}

// noOverflow asserts that nothing scrolls sideways.
func noOverflow(t testing.TB, ctx context.Context, when string) {
	t.Helper()
	type widths struct{ Doc, Body, Scroller, Inner int }
	w := eval[widths](t, ctx, `({Doc: document.documentElement.scrollWidth, Body: document.body.scrollWidth, Scroller: document.querySelector('#scroller')?.scrollWidth ?? 0, Inner: window.innerWidth})`)
	if w.Doc > w.Inner || w.Body > w.Inner || w.Scroller > w.Inner {
		t.Errorf("%s: horizontal overflow: %+v", when, w)
	}
}

// richConversation scripts a conversation that shows most of the UI.
func richConversation(t testing.TB, ts *testServer) string {
	t.Helper()
	ctx := context.Background()
	for _, title := range []string{"Trip ideas for October", "SQL window functions", "Refactor the billing module", "Birthday message for Sam"} {
		if _, err := ts.Runner.Create(ctx, agent.NewConversation{Title: title}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := ts.Runner.Create(ctx, agent.NewConversation{Title: "Weekend in Paris: weather and packing"})
	if err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{
		Reasoning: "The user wants the weather for a weekend in Paris. I should call the forecast tool for Paris for two days, then suggest what to pack.",
		ToolCalls: []agent.ToolCall{{Name: "weather__forecast", Arguments: `{"city":"Paris","days":2}`}},
	})
	ts.Fake.Enqueue(llmtest.Reply{Text: "Here is the forecast for your weekend in **Paris**:\n\n" +
		"| Day | High | Sky |\n|---|---|---|\n| Monday | 21 °C | Sunny |\n| Tuesday | 18 °C | Showers |\n\n" +
		"### What to pack\n\n1. A light jacket for the evenings\n2. A compact umbrella for Tuesday\n3. Comfortable shoes: you will walk a lot\n\n" +
		"If you want to check the forecast again from a script:\n\n```python\nimport requests\n\ndef forecast(city: str, days: int = 2) -> dict:\n    r = requests.get(\"https://api.example.com/forecast\", params={\"city\": city, \"days\": days})\n    r.raise_for_status()\n    return r.json()\n```\n"})
	if _, err := ts.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("I'm spending the weekend in Paris. What will the weather be like, and what should I pack?")}}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, ts, c.ID)
	return c.ID
}

func TestBrowserPhoneLayout(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withTools())
	id := richConversation(t, ts)
	tab := browserTab(t, ts)
	do(t, tab, chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	openPage(t, ts, tab, "/")
	noOverflow(t, tab, "phone, new chat")
	screenshot(t, tab, "phone-empty.png")
	openPage(t, ts, tab, "/c/"+id)
	waitJS(t, tab, "rendered history", `document.querySelector('#main').dataset.rendered === 'true'`)
	noOverflow(t, tab, "phone, conversation")
	if eval[bool](t, tab, `getComputedStyle(document.querySelector('#sidebar')).transform === 'none'`) {
		t.Error("the sidebar covers the chat on a phone")
	}
	screenshot(t, tab, "phone.png")
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-action="open-sidebar"]`)))
	waitJS(t, tab, "open sidebar", `document.body.dataset.sidebar === 'open' && getComputedStyle(document.querySelector('#sidebar')).transform === 'none'`)
	noOverflow(t, tab, "phone, sidebar open")
	screenshot(t, tab, "phone-sidebar.png")
}

func TestBrowserScreenshots(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withTools())
	id := richConversation(t, ts)
	tab := browserTab(t, ts)
	do(t, tab, chromedp.EmulateViewport(1280, 860))
	openPage(t, ts, tab, "/")
	noOverflow(t, tab, "desktop, new chat")
	screenshot(t, tab, "desktop-empty.png")
	openPage(t, ts, tab, "/c/"+id)
	waitJS(t, tab, "rendered history", `document.querySelector('#main').dataset.rendered === 'true'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('#messages [data-testid="tool-card"] details').open = true; document.querySelector('#scroller').scrollTop = 0`))
	noOverflow(t, tab, "desktop, conversation")
	screenshot(t, tab, "desktop.png")
	do(t, tab, darkMode(true))
	screenshot(t, tab, "desktop-dark.png")
}

func TestBrowserRenameDeleteTemp(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	c, err := ts.Runner.Create(ctx, agent.NewConversation{Title: "Old title"})
	if err != nil {
		t.Fatal(err)
	}
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/c/"+c.ID)

	// Rename in place: Enter commits.
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="rename"]`)))
	waitJS(t, tab, "title input", `document.activeElement?.dataset.testid === 'title-input'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.activeElement.value = 'New title'`), press("Enter", 0))
	item := `document.querySelector('[data-testid="conversation-item"][data-id="` + c.ID + `"]')`
	waitJS(t, tab, "renamed in the sidebar", item+`?.textContent.includes('New title')`)
	if got, err := ts.Convs.Get(ctx, c.ID); err != nil || got.Title != "New title" {
		t.Errorf("stored title = %q, %v", got.Title, err)
	}
	if got := eval[string](t, tab, `document.querySelector('#chat-title').textContent`); got != "New title" {
		t.Errorf("header title = %q", got)
	}

	// Delete asks first; Cancel keeps the conversation.
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="delete"]`)))
	waitJS(t, tab, "confirm dialog", `document.querySelector('#confirm-delete').open`)
	do(t, tab, chromedp.Click(chromedp.CSS(`#confirm-delete button[value="cancel"]`)))
	waitJS(t, tab, "dialog closed", `!document.querySelector('#confirm-delete').open`)
	if _, err := ts.Convs.Get(ctx, c.ID); err != nil {
		t.Fatalf("cancel deleted the conversation: %v", err)
	}
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="delete"]`)))
	waitJS(t, tab, "confirm dialog", `document.querySelector('#confirm-delete').open`)
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="confirm-delete-button"]`)))
	waitJS(t, tab, "back on the new-chat page", `location.pathname === '/' && `+item+` === null && document.querySelector('[data-testid="empty-state"]') !== null`)
	if _, err := ts.Convs.Get(ctx, c.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("after delete: %v, want not found", err)
	}

	// A temporary chat is created as temp on its first message.
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="temp-chat"]`)))
	waitJS(t, tab, "temporary badge", `!document.querySelector('#temp-badge').hidden`)
	send(t, tab, "just between us")
	id := conversationID(t, tab)
	waitJS(t, tab, "answer", jsAnswers+`.length === 1`)
	tc, err := ts.Convs.Get(ctx, id)
	if err != nil || !tc.Temp {
		t.Errorf("conversation %s: temp=%v, %v", id, tc.Temp, err)
	}
	if got := eval[string](t, tab, `document.querySelector('[data-testid="conversation-item"][data-id="`+id+`"]')?.dataset.temp ?? ''`); got != "true" {
		t.Errorf("sidebar data-temp = %q", got)
	}
}

// trackSockets makes every page of the tab record its WebSockets in
// window.__sockets, so a test can cut the connection like a network drop,
// and count the messages they received in window.__received (counted by
// each socket's first listener, before the page's own sees the message).
func trackSockets() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			(() => {
				const Native = window.WebSocket;
				window.__sockets = [];
				window.__received = 0;
				window.WebSocket = class extends Native {
					constructor(...args) {
						super(...args);
						window.__sockets.push(this);
						this.addEventListener('message', () => { window.__received++; });
					}
				};
			})();`})
		return err
	})
}

func TestBrowserNetworkDropMidStream(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	do(t, tab, trackSockets())
	openPage(t, ts, tab, "/")
	send(t, tab, "[[tokens=200 delay=15ms]]")
	conversationID(t, tab)
	waitJS(t, tab, "streamed text", jsStreaming+`?.textContent.includes('t20 ')`)

	// Drop the connection twice during the answer.
	for i := range 2 {
		do(t, tab, chromedp.Evaluate[chromedp.Void](`window.__sockets.forEach(s => s.close())`))
		waitJS(t, tab, "connection indicator leaves online", `document.getElementById('connection').dataset.state !== 'online'`)
		waitJS(t, tab, fmt.Sprintf("reconnect %d", i+1), `document.getElementById('connection').dataset.state === 'online' && window.__sockets.length === `+fmt.Sprint(i+2))
	}
	// The in-progress answer resumed from the cursor: no token lost or doubled.
	waitJS(t, tab, "streaming after the drops", jsStreaming+`?.textContent.includes(' t150 ') || `+jsAnswers+`.length === 1`)
	if live := strings.TrimSpace(eval[string](t, tab, jsStreaming+`?.textContent ?? ''`)); live != "" && !strings.HasPrefix(llmtest.Tokens(200)+" ", live+" ") {
		t.Errorf("in-progress answer after the drops is not t1…tN: %q", live)
	}
	waitJS(t, tab, "persisted answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if got := answerText(t, tab, 0); got != llmtest.Tokens(200) {
		t.Errorf("after two network drops the answer is %q, want t1…t200 exactly once", got)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('#messages > [data-type="user_message"]').length`); n != 1 {
		t.Errorf("user messages = %d, want 1", n)
	}
}
