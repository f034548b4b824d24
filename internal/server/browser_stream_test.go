package server_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// longAnswer is about n words of markdown in paragraphs, lists and code
// blocks, like a real long answer.
func longAnswer(n int) string {
	var b strings.Builder
	words := 0
	for i := 0; words < n; i++ {
		switch i % 5 {
		case 3:
			b.WriteString("```go\nfunc f" + fmt.Sprint(i) + "() int {\n\treturn " + fmt.Sprint(i) + "\n}\n```\n\n")
			words += 8
		case 4:
			b.WriteString("- first point\n- second point\n- third point\n\n")
			words += 9
		default:
			for j := 0; j < 40; j++ {
				fmt.Fprintf(&b, "w%d ", words)
				words++
			}
			b.WriteString("**end**.\n\n")
			words++
		}
	}
	return b.String()
}

// TestBrowserLongAnswerStreams streams a 10k-word markdown answer and
// checks that all of it arrives and is persisted. What rendering a frame
// costs early and late in the answer (it must stay flat: the stream is
// rendered incrementally) is measured by BenchmarkBrowserLongAnswerRender.
func TestBrowserLongAnswerStreams(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	text := longAnswer(10000)
	ts.Fake.Enqueue(llmtest.Reply{Text: text, ChunkSize: 400, Delay: time.Millisecond})
	send(t, tab, "write a lot")
	waitJS(t, tab, "streamed text", jsStreaming+`?.textContent.includes('w100 ')`)
	waitJS(t, tab, "persisted long answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if n := eval[int](t, tab, `performance.getEntriesByName('agentik:render').length`); n == 0 {
		t.Error("no stream frame was rendered")
	}
	got := answerText(t, tab, 0)
	for _, w := range []string{"w0 ", "w9999"} {
		if !strings.Contains(got, w) {
			t.Errorf("the persisted answer lacks %q", w)
		}
	}
	if n := eval[int](t, tab, jsAnswers+`[0].querySelectorAll('.code-block').length`); n == 0 {
		t.Error("the answer's code blocks are not rendered")
	}
}

// onePixelPNG is a 1×1 PNG.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// TestBrowserPasteAndDropImage pastes one image and drops another into the
// composer; both go out as image content, reach the model as image parts,
// and show in the sent message.
func TestBrowserPasteAndDropImage(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	ts.Fake.Enqueue(llmtest.Reply{Text: "nice pictures"})
	file := `(() => { const b = Uint8Array.from(atob('` + onePixelPNG + `'), (c) => c.charCodeAt(0)); const dt = new DataTransfer(); dt.items.add(new File([b], 'dot.png', { type: 'image/png' })); return dt; })()`
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const p = document.querySelector('#prompt'); p.focus(); p.dispatchEvent(new ClipboardEvent('paste', { clipboardData: `+file+`, bubbles: true, cancelable: true })); })()`))
	waitJS(t, tab, "pasted image in the tray", `document.querySelectorAll('[data-testid="attachment"]').length === 1`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.dispatchEvent(new DragEvent('drop', { dataTransfer: `+file+`, bubbles: true, cancelable: true }))`))
	waitJS(t, tab, "dropped image in the tray", `document.querySelectorAll('[data-testid="attachment"]').length === 2`)
	send(t, tab, "what are these?")
	waitJS(t, tab, "answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if n := eval[int](t, tab, `document.querySelectorAll('#messages [data-type="user_message"] img').length`); n != 2 {
		t.Errorf("the sent message shows %d images, want 2", n)
	}
	reqs := ts.Fake.Requests()
	var images int
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, p := range m.Parts {
			if p.Type == "image_url" && strings.HasPrefix(p.ImageURL, "data:image/png;base64,") {
				images++
			}
		}
	}
	if images != 2 {
		t.Errorf("the model got %d image parts, want 2", images)
	}
}

// TestBrowserShowEarlierMessages: a conversation longer than the page
// renders offers its earlier messages, which arrive in order, above.
func TestBrowserShowEarlierMessages(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withPageMessages(100)) // the default is 1000; seeding as many is slow under -race
	br := newBrowser(t, ts)
	id := seedConversation(t, ts, "Long", 52) // 104 messages; the page shows the latest 100
	tab := br.tab()
	openPage(t, ts, tab, "/c/"+id)
	if got := eval[string](t, tab, `document.querySelector('[data-testid="load-earlier"]')?.textContent ?? ''`); got != "Show 4 earlier messages" {
		t.Fatalf("button = %q", got)
	}
	// Click once the history is rendered (until then the layout shifts).
	waitJS(t, tab, "history rendered", `document.querySelector('#main').dataset.rendered === 'true'`)
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="load-earlier"]`)))
	waitJS(t, tab, "earlier messages", `document.querySelectorAll('#messages > article').length === 104`)
	if eval[bool](t, tab, `document.querySelector('[data-testid="load-earlier"]') !== null`) {
		t.Error("the button stays after everything is shown")
	}
	first := eval[string](t, tab, `document.querySelector('#messages > article').textContent`)
	if !strings.Contains(first, "Question 0:") {
		t.Errorf("first message = %q, want Question 0", first)
	}
	order := eval[bool](t, tab, `(() => { const s = [...document.querySelectorAll('#messages > article[data-seq]')].map((e) => Number(e.dataset.seq)); return s.every((v, i) => i === 0 || v > s[i - 1]); })()`)
	if !order {
		t.Error("messages are not in seq order after loading earlier ones")
	}
}

// TestBrowserLongChatOfBigMessages: a conversation of 16 messages of 64
// KiB under a 200 KiB history bound renders only its latest few (the page
// stays small), and "Show earlier messages" pages back, a few at a time,
// until every message is shown once, in order.
func TestBrowserLongChatOfBigMessages(t *testing.T) {
	t.Parallel()
	const n, size, bound = 16, 64 << 10, 200 << 10
	ts := newTestServer(t, withHistoryBytes(bound))
	c := bigConversation(t, ts, n, size)
	resp := ts.do(t, "GET", "/c/"+c.ID, "")
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(page) > 2*bound {
		t.Fatalf("page: %d, %d bytes for a bound of %d", resp.StatusCode, len(page), bound)
	}
	br := newBrowser(t, ts)
	tab := br.tab()
	openPage(t, ts, tab, "/c/"+c.ID)
	shown := eval[int](t, tab, `document.querySelectorAll('#messages > article').length`)
	if shown < 1 || shown > bound/size {
		t.Fatalf("the page shows %d messages, want at most %d", shown, bound/size)
	}
	if got, want := eval[string](t, tab, `document.querySelector('[data-testid="load-earlier"]')?.textContent ?? ''`), fmt.Sprintf("Show %d earlier messages", n-shown); got != want {
		t.Fatalf("button = %q, want %q", got, want)
	}
	waitJS(t, tab, "history rendered", `document.querySelector('#main').dataset.rendered === 'true'`)
	for clicks := 0; eval[bool](t, tab, `document.querySelector('[data-testid="load-earlier"]') !== null`); clicks++ {
		if clicks > n {
			t.Fatal("the button stays")
		}
		before := eval[int](t, tab, `document.querySelectorAll('#messages > article').length`)
		do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="load-earlier"]`)))
		waitJS(t, tab, "a page of earlier messages", fmt.Sprintf(`document.querySelectorAll('#messages > article').length > %d && !document.querySelector('[data-testid="load-earlier"]')?.disabled`, before))
		if got := eval[int](t, tab, `document.querySelectorAll('#messages > article').length`); got-before > bound/size {
			t.Fatalf("one click added %d messages, past the bound", got-before)
		}
	}
	got := eval[[]string](t, tab, `[...document.querySelectorAll('#messages > article')].map((e) => e.textContent.match(/m\d{3}/)?.[0] ?? '?')`)
	if len(got) != n {
		t.Fatalf("%d messages shown, want %d: %v", len(got), n, got)
	}
	for i, g := range got {
		if want := fmt.Sprintf("m%03d", i); g != want {
			t.Fatalf("message %d is %s, want %s (%v)", i, g, want, got)
		}
	}
}
