package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// Artifacts (assets/src/artifacts.js): an answer's HTML opens in a side
// panel, in a sandboxed frame that can reach neither the network nor the
// app's page, cookies or storage.

const jsPanel = `document.querySelector('[data-testid="artifact-panel"]')`

// jsReports collects what artifact frames post to the page (a sandboxed
// frame runs in its own process, out of the page's reach, so it reports its
// own body this way); jsReport is the text of the latest report.
const (
	jsListen = `window.__reports = []; addEventListener('message', (e) => { if (typeof e.data === 'string') window.__reports.push(e.data); })`
	jsReport = `(window.__reports || []).at(-1) || ''`
)

// reportScript is a script an artifact ends with: it posts its body's text
// to the page, for the test to read.
const reportScript = `<script>parent.postMessage(document.body.innerText, '*');</script>`

// TestBrowserArtifactSandbox: an HTML artifact that tries to reach the
// network, the parent page, cookies, storage and the top window fails at
// every attempt, and says so in its own body.
func TestBrowserArtifactSandbox(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	listener := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		t.Logf("the artifact reached the network: %s %s", r.Method, r.URL)
		w.Header().Set("Access-Control-Allow-Origin", "*")
	}))
	t.Cleanup(listener.Close)
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	probe := `<!DOCTYPE html><html><head><title>Probe</title></head><body><pre id="out"></pre><script>
const out = document.getElementById('out');
const say = (s) => { out.textContent += s + '\n'; };
function attempt(name, fn) {
  try { const v = fn(); say(name + ': ALLOWED ' + String(v)); } catch (e) { say(name + ': blocked (' + e.name + ')'); }
}
attempt('parent', () => parent.document.title);
attempt('parent-dom', () => { parent.document.body.append('PWNED'); return 'appended'; });
attempt('cookie-set', () => { document.cookie = 'pwned=1; path=/'; return document.cookie; });
attempt('storage', () => { localStorage.setItem('pwned', '1'); return localStorage.getItem('pwned'); });
attempt('top', () => { top.location = '` + listener.URL + `/top'; return 'navigating'; });
const img = new Image(); img.src = '` + listener.URL + `/img';
fetch('` + listener.URL + `/fetch').then((r) => say('fetch: ALLOWED ' + r.status), (e) => say('fetch: blocked (' + e.name + ')')).finally(() => { say('done'); parent.postMessage(document.body.innerText, '*'); });
</script></body></html>`
	ts.Fake.Enqueue(llmtest.Reply{Text: "Here is the page:\n\n```html title=\"Probe\"\n" + probe + "\n```\n"})
	send(t, tab, "make a probe")
	waitJS(t, tab, "the answer's Open button", jsAnswers+`[0]?.querySelector('[data-testid="artifact-open"]')`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](jsListen))
	before := eval[[]string](t, tab, `[location.href, document.title, document.cookie, String(localStorage.length), document.body.innerText.includes('PWNED') ? 'pwned' : 'clean']`)
	do(t, tab, chromedp.Click(chromedp.CSS(`#messages [data-testid="artifact-open"]`)))
	waitJS(t, tab, "the panel", jsPanel+` && !`+jsPanel+`.hidden`)
	if got := eval[string](t, tab, jsPanel+`.querySelector('iframe').getAttribute('sandbox')`); got != "allow-scripts" {
		t.Errorf("sandbox = %q, want allow-scripts only", got)
	}

	waitJS(t, tab, "the artifact's report", jsReport+`.includes('done')`)
	text := eval[string](t, tab, jsReport)
	t.Logf("the artifact says:\n%s", text)
	for _, name := range []string{"parent", "parent-dom", "cookie-set", "storage", "top", "fetch"} {
		if !strings.Contains(text, name+": blocked") {
			t.Errorf("%s was not blocked inside the frame", name)
		}
	}
	after := eval[[]string](t, tab, `[location.href, document.title, document.cookie, String(localStorage.length), document.body.innerText.includes('PWNED') ? 'pwned' : 'clean']`)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the app page changed: before %q, after %q", before, after)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the test's listener got %d requests from the artifact", n)
	}
}

// chartAnswer is an answer with version v of the HTML artifact "Chart":
// its frame reports "chart vN".
func chartAnswer(v int) string {
	return fmt.Sprintf("Version %d:\n\n```html title=\"Chart\"\n<p>chart v%d</p>%s\n```\n", v, v, reportScript)
}

// TestBrowserArtifactVersions: two answers with an HTML artifact of the
// same title are two versions of one artifact; the panel shows the latest
// as 2 of 2, switches to 1, and re-opens as it was after a reload.
func TestBrowserArtifactVersions(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	ts.Fake.Enqueue(llmtest.Reply{Text: chartAnswer(1)})
	send(t, tab, "draw a chart")
	waitJS(t, tab, "first answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	ts.Fake.Enqueue(llmtest.Reply{Text: chartAnswer(2)})
	send(t, tab, "make it better")
	waitJS(t, tab, "second answer's Open", jsAnswers+`.length === 2 && `+jsAnswers+`[1].querySelector('[data-testid="artifact-open"]')`)

	do(t, tab, chromedp.Evaluate[chromedp.Void](jsListen))
	do(t, tab, chromedp.Click(chromedp.CSS(`#messages [data-type="assistant_message"]:last-of-type [data-testid="artifact-open"]`)))
	waitJS(t, tab, "version 2 of 2", jsPanel+`?.dataset.version === '2/2' && !`+jsPanel+`.hidden`)
	waitJS(t, tab, "version 2 in the frame", jsReport+` === 'chart v2'`)
	if got := eval[string](t, tab, jsPanel+`.querySelector('[data-testid="artifact-version"] option:checked').textContent`); got != "Version 2 of 2" {
		t.Errorf("picker shows %q", got)
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const s = `+jsPanel+`.querySelector('[data-testid="artifact-version"]'); s.value = '0'; s.dispatchEvent(new Event('change')); })()`))
	waitJS(t, tab, "version 1 of 2", jsPanel+`.dataset.version === '1/2'`)
	waitJS(t, tab, "version 1 in the frame", jsReport+` === 'chart v1'`)

	// After a reload the panel is open again, on version 1.
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	do(t, tab, chromedp.Evaluate[chromedp.Void](jsListen))
	waitJS(t, tab, "the panel re-opened on version 1 of 2", jsPanel+`?.dataset.version === '1/2' && !`+jsPanel+`.hidden`)
	if got := eval[string](t, tab, jsPanel+`.querySelector('[data-testid="artifact-title"]').textContent`); got != "Chart" {
		t.Errorf("title after reload = %q, want Chart", got)
	}
	// Closed, it stays closed.
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="artifact-close"]`)))
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	waitJS(t, tab, "rendered history", `document.querySelector('#main').dataset.rendered === 'true'`)
	if eval[bool](t, tab, jsPanel+` !== null && !`+jsPanel+`.hidden`) {
		t.Error("a closed panel re-opened after a reload")
	}
}

// TestBrowserMermaid: an answer's ```mermaid block is drawn as an SVG in
// place of its code, by Mermaid running in a sandboxed frame, and opens
// as an SVG in the panel; a block that does not parse stays code and says
// why.
func TestBrowserMermaid(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	ts.Fake.Enqueue(llmtest.Reply{Text: "The flow:\n\n```mermaid\ngraph TD\n  A[Alpha step] --> B{Beta choice}\n  B -->|yes| C[Gamma end]\n```\n\nAnd a broken one:\n\n```mermaid\ngraph TD\n  A[Alpha --> \n```\n"})
	send(t, tab, "draw the flow")
	const blocks = `document.querySelectorAll('#messages [data-type="assistant_message"] .code-block')`
	waitJS(t, tab, "the diagram drawn", blocks+`[0]?.dataset.diagram === 'drawn' && `+blocks+`[0].querySelector('[data-testid="mermaid-diagram"] img')?.complete`)

	img := `document.querySelector('#messages [data-testid="mermaid-diagram"] img')`
	if w := eval[int](t, tab, img+`.naturalWidth`); w < 50 {
		t.Errorf("the diagram image is %d px wide", w)
	}
	svg := eval[string](t, tab, `decodeURIComponent(`+img+`.src.replace(/^data:image\/svg\+xml;charset=utf-8,/, ''))`)
	if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "Alpha step") || !strings.Contains(svg, "Gamma end") {
		t.Errorf("the image is not the diagram's SVG: %.300s", svg)
	}
	if eval[bool](t, tab, blocks+`[0].querySelector('pre').checkVisibility()`) {
		t.Error("the drawn diagram's code still shows")
	}
	if got := eval[string](t, tab, `document.querySelector('[data-testid="mermaid-renderer"]').getAttribute('sandbox')`); got != "allow-scripts" {
		t.Errorf("the renderer frame's sandbox = %q, want allow-scripts only", got)
	}
	if eval[bool](t, tab, `typeof window.mermaid !== 'undefined'`) {
		t.Error("Mermaid runs in the app's page")
	}

	// The broken block stays code, and says it was not drawn.
	waitJS(t, tab, "the broken block's error", blocks+`[1]?.dataset.diagram === 'error'`)
	if !eval[bool](t, tab, blocks+`[1].querySelector('pre').checkVisibility() && !`+blocks+`[1].querySelector('[data-testid="mermaid-diagram"]')`) {
		t.Error("the broken diagram does not show as code")
	}

	screenshot(t, tab, "mermaid-inline.png")

	// "Code" shows the source instead; the panel shows the SVG.
	do(t, tab, chromedp.Click(chromedp.CSS(`#messages [data-testid="diagram-toggle"]`)))
	waitJS(t, tab, "the code shown", blocks+`[0].querySelector('pre').checkVisibility() && !`+blocks+`[0].querySelector('[data-testid="mermaid-diagram"]').checkVisibility()`)
	do(t, tab, chromedp.Click(chromedp.CSS(`#messages [data-testid="artifact-open"]`)))
	waitJS(t, tab, "the diagram in the panel", jsPanel+`?.dataset.diagram === 'drawn' && `+jsPanel+`.querySelector('iframe[data-testid="artifact-frame"]')?.getAttribute('sandbox') === 'allow-scripts'`)
	screenshot(t, tab, "mermaid-panel.png")
}
