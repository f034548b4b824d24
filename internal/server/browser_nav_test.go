package server_test

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
)

// holdFetches makes the page's fetch of a URL containing window.__holdPath
// wait until window.__release() is called; window.__textRead counts how
// many held responses have been read since.
func holdFetches() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			(() => {
				const native = window.fetch.bind(window);
				const held = [];
				window.__textRead = 0;
				window.__release = () => held.splice(0).forEach((go) => go());
				window.fetch = async (url, opts) => {
					if (!window.__holdPath || !String(url).includes(window.__holdPath)) return native(url, opts);
					await new Promise((go) => held.push(go));
					const res = await native(url, opts);
					const text = res.text.bind(res);
					res.text = async () => { const t = await text(); window.__textRead++; return t; };
					return res;
				};
			})();`})
		return err
	})
}

// TestBrowserLastNavigationWins: a conversation clicked, then another
// before the first page arrived: the first page, arriving last, does not
// replace the second (it did, and so did a branch re-render fetched
// mid-turn, which left a regenerated answer without its "‹ 2 / 2 ›").
func TestBrowserLastNavigationWins(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ids := make([]string, 3)
	for i, title := range []string{"first", "slow", "fast"} {
		c, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = c.ID
	}
	tab := browserTab(t, ts)
	do(t, tab, holdFetches())
	openPage(t, ts, tab, "/c/"+ids[0])
	waitJS(t, tab, "sidebar links", `document.querySelectorAll('#sidebar a[href^="/c/"]').length === 3`)

	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => {
		window.__holdPath = '/c/`+ids[1]+`';
		document.querySelector('#sidebar a[href="/c/`+ids[1]+`"]').click();
		document.querySelector('#sidebar a[href="/c/`+ids[2]+`"]').click();
	})()`))
	waitJS(t, tab, "the second page", `document.querySelector('#main').dataset.conversationId === '`+ids[2]+`'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`window.__release()`))
	waitJS(t, tab, "the held page read", `window.__textRead === 1`)
	// The read resolves before this evaluation runs (a task after its
	// microtasks): a navigate that would mount it has done so by now.
	if got := eval[string](t, tab, `document.querySelector('#main').dataset.conversationId + ' ' + location.pathname`); got != ids[2]+" /c/"+ids[2] {
		t.Fatalf("after the held page arrived the tab shows %q, want %q", got, ids[2]+" /c/"+ids[2])
	}
	waitConnected(t, tab)
}
