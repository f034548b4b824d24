package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// chromium finds the browser the suite drives.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AGENTIK_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: install chromium or set AGENTIK_CHROMIUM")
	return ""
}

// usePage is the useChat page of testdata/usechat (@ai-sdk/react and
// react from node_modules, bundled here with esbuild), served from its own
// origin as a developer's app is, and a headless Chromium tab.
type usePage struct {
	ctx  context.Context
	site string // the page's origin, for AGENTIK_ALLOWED_ORIGINS
}

func newUsePage(t *testing.T) *usePage {
	t.Helper()
	root := repoRoot(t)
	dir := t.TempDir()
	build := exec.Command(filepath.Join(root, "node_modules", "esbuild", "bin", "esbuild"), filepath.Join("testdata", "usechat", "page.jsx"),
		"--bundle", "--jsx=automatic", `--define:process.env.NODE_ENV="production"`, "--log-level=warning", "--outfile="+filepath.Join(dir, "page.js"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("esbuild: %v\n%s", err, out)
	}
	html, err := os.ReadFile(filepath.Join("testdata", "usechat", "page.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "page.html"), html, 0o600); err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(site.Close)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(filepath.Join(dir, "chromium")), chromedp.Flag("disable-dev-shm-usage", true))
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelT)
	return &usePage{ctx: ctx, site: site.URL}
}

// url is the page for chat id on agentik p (key: its API key, or "").
func (u *usePage) url(p *proc, chat, key string) string {
	return u.site + "/page.html?" + url.Values{"api": {"http://" + p.addr}, "chat": {chat}, "key": {key}}.Encode()
}

// origin is the page's host:port.
func (u *usePage) origin() string { return strings.TrimPrefix(u.site, "http://") }

// do runs steps, failing with the page's text and agentik's logs.
func (u *usePage) do(t *testing.T, p *proc, step string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(u.ctx, steps...); err != nil {
		body, _ := chromedp.Run(u.ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage: %s\nagentik logs:\n%s", step, err, body, p.logs)
	}
}

func poll(expr string, within time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(within))
}

// TestUseChatPageResumes opens the useChat page in headless Chromium
// against the real binary: it sends a message, reloads the page in the
// middle of the answer, and useChat({resume: true}) shows the whole answer
// after the reload, once.
func TestUseChatPageResumes(t *testing.T) {
	t.Parallel()
	u := newUsePage(t)
	_, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake",
		"AGENTIK_ALLOWED_ORIGINS="+u.origin())
	const answerWords = 300
	u.do(t, p, "send",
		chromedp.Navigate(u.url(p, "chat-browser-1", "")),
		chromedp.WaitVisible(chromedp.CSS("#input")),
		chromedp.SendKeys(chromedp.CSS("#input"), "[[tokens=300]] [[delay=20ms]]"),
		chromedp.Click(chromedp.CSS("#send")),
		// Mid-answer: some words are there, not all of them.
		poll(`(() => { const a = document.querySelector(".msg.assistant"); return a && a.textContent.includes("t5 ") && !a.textContent.includes("t300") })()`, 20*time.Second),
	)
	mid, err := chromedp.Run(u.ctx, chromedp.Text(chromedp.CSS(".msg.assistant")))
	if err != nil {
		t.Fatal(err)
	}
	u.do(t, p, "resume after reload",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("#input")),
		// After the reload, useChat resumes: the whole answer, once.
		poll(`document.querySelector("#status").textContent === "ready" && [...document.querySelectorAll(".msg.assistant")].some((a) => a.textContent.includes("t300"))`, 40*time.Second),
	)
	answers, err := chromedp.Run(u.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".msg.assistant")].map((a) => a.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(answers) != 1 || answers[0] != llmtest.Tokens(answerWords) {
		t.Errorf("after the reload the page shows %d answers; want the whole answer once (%d words, mid-answer there were %d)", len(answers), answerWords, len(strings.Fields(mid)))
		for _, a := range answers {
			t.Logf("answer: %.80q…", a)
		}
	}
	if strings.Contains(mid, "t300") {
		t.Errorf("the page was reloaded after the answer ended: %q", mid)
	}
}

// TestUseChatPageApproval: a tool call that waits for approval shows on the
// useChat page as a tool part awaiting approval; it still does after a
// reload (the wait is stored, the resume replays it), and the AI SDK's own
// flow (addToolApprovalResponse, sendAutomaticallyWhen) answers it: the
// tool runs and the answer streams on.
func TestUseChatPageApproval(t *testing.T) {
	t.Parallel()
	const key = "sk-agentik-test"
	u := newUsePage(t)
	p := frontEnd(t, key, "AGENTIK_ALLOWED_ORIGINS="+u.origin())
	waiting := `document.querySelector('.tool[data-state="approval-requested"] .approve') !== null && document.querySelector("#status").textContent === "ready"`
	u.do(t, p, "ask",
		chromedp.Navigate(u.url(p, "chat-browser-approval", key)),
		chromedp.WaitVisible(chromedp.CSS("#input")),
		chromedp.SendKeys(chromedp.CSS("#input"), `[[tool=everything__get-sum args={"a":2,"b":3}]]`),
		chromedp.Click(chromedp.CSS("#send")),
		poll(waiting, 20*time.Second),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("#input")),
		poll(waiting, 20*time.Second),
		chromedp.Click(chromedp.CSS(".approve")),
		poll(`document.querySelector("#status").textContent === "ready" && document.querySelector('.tool[data-state="output-available"]') !== null && document.querySelector(".msg.assistant").textContent.includes("tool said:")`, 30*time.Second),
	)
	text, err := chromedp.Run(u.ctx, chromedp.Text(chromedp.CSS(".msg.assistant")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "5") {
		t.Errorf("the approved call's answer: %q", text)
	}
}
