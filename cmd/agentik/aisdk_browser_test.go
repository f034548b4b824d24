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

// TestUseChatPageResumes opens a real useChat page (@ai-sdk/react and
// react from node_modules, bundled here with esbuild; served from another
// origin, as a developer's own app is) in headless Chromium against the
// real binary: it sends a message, reloads the page in the middle of the
// answer, and useChat({resume: true}) shows the whole answer after the
// reload, once.
func TestUseChatPageResumes(t *testing.T) {
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
	defer site.Close()

	_, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), filepath.Join(dir, "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake",
		"AGENTIK_ALLOWED_ORIGINS="+strings.TrimPrefix(site.URL, "http://"))

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(filepath.Join(dir, "chromium")), chromedp.Flag("disable-dev-shm-usage", true))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, time.Minute)
	defer cancelT()

	const answerWords = 300
	page := site.URL + "/page.html?" + url.Values{"api": {"http://" + p.addr}, "chat": {"chat-browser-1"}}.Encode()
	fail := func(step string, err error) {
		t.Helper()
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage: %s\nagentik logs:\n%s", step, err, body, p.logs)
	}
	poll := func(expr string, within time.Duration) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(within))
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS("#input")),
		chromedp.SendKeys(chromedp.CSS("#input"), "[[tokens=300]] [[delay=10ms]]"),
		chromedp.Click(chromedp.CSS("#send")),
		// Mid-answer: some words are there, not all of them.
		poll(`(() => { const a = document.querySelector(".msg.assistant"); return a && a.textContent.includes("t5 ") && !a.textContent.includes("t300") })()`, 20*time.Second),
	); err != nil {
		fail("send", err)
	}
	mid, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".msg.assistant")))
	if err != nil {
		fail("mid-answer", err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("#input")),
		// After the reload, useChat resumes: the whole answer, once.
		poll(`document.querySelector("#status").textContent === "ready" && [...document.querySelectorAll(".msg.assistant")].some((a) => a.textContent.includes("t300"))`, 40*time.Second),
	); err != nil {
		fail("resume after reload", err)
	}
	answers, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".msg.assistant")].map((a) => a.textContent)`))
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
