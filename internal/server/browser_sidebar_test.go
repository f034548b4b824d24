package server_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
)

// jsSidebarGroups reads the sidebar as a reader sees it: each visible
// group heading, then the titles under it ("Today: a, b | Yesterday: c").
const jsSidebarGroups = `(() => {
	const out = [];
	for (const li of document.querySelectorAll('#conv-list > li')) {
		if (!li.checkVisibility()) continue;
		const head = li.querySelector('[role="heading"]');
		if (head?.checkVisibility() && head.innerText.trim()) out.push({ group: head.innerText.trim(), titles: [] });
		if (!out.length) out.push({ group: '', titles: [] });
		out[out.length - 1].titles.push(li.querySelector('a').innerText.trim());
	}
	return out.map((g) => g.group + ': ' + g.titles.join(', ')).join(' | ');
})()`

func TestBrowserSidebarGroupsPinArchive(t *testing.T) {
	t.Parallel()
	clk := &backClock{}
	ts := newTestServer(t, withClock(clk))
	for _, c := range []struct {
		title  string
		behind time.Duration
	}{{"old chat", 40 * 24 * time.Hour}, {"three days ago", 3 * 24 * time.Hour}, {"yesterday chat", 24 * time.Hour}, {"today chat", 0}} {
		clk.set(c.behind)
		ts.call(t, "POST", "/agentik/conversations", `{"title":"`+c.title+`"}`, 201, nil)
	}
	clk.set(0)
	b := newBrowser(t, ts)
	tab, other := b.tab(), b.tab()
	openPage(t, ts, tab, "/")
	openPage(t, ts, other, "/")
	if got, want := eval[string](t, tab, jsSidebarGroups), "Today: today chat | Yesterday: yesterday chat | Previous 7 days: three days ago | Older: old chat"; got != want {
		t.Errorf("sidebar groups:\n got %s\nwant %s", got, want)
	}
	screenshot(t, tab, "sidebar-groups.png")

	row := func(title string) string {
		js, _ := json.Marshal(title)
		return `[...document.querySelectorAll('#conv-list > li')].find((li) => li.querySelector('a').innerText.trim() === ` + string(js) + `)`
	}
	// Pin the oldest: it goes to the top, under Pinned, keeping its date.
	clickIn(t, tab, row("old chat"), "Pin")
	wantPinned := "Pinned: old chat | Today: today chat | Yesterday: yesterday chat | Previous 7 days: three days ago"
	waitJS(t, tab, "the pinned chat on top", jsSidebarGroups+` === `+jsonString(wantPinned))
	waitJS(t, other, "the pinned chat on top in the other tab", jsSidebarGroups+` === `+jsonString(wantPinned))
	if !eval[bool](t, tab, row("old chat")+`.querySelector('button[aria-label="Pin"]').getAttribute('aria-pressed') === 'true'`) {
		t.Error("the Pin button of a pinned chat is not pressed")
	}

	// Archive yesterday's: it leaves the list, behind Show archived.
	clickIn(t, tab, row("yesterday chat"), "Archive")
	wantArchived := "Pinned: old chat | Today: today chat | Previous 7 days: three days ago"
	waitJS(t, tab, "the archived chat gone", jsSidebarGroups+` === `+jsonString(wantArchived))
	click(t, tab, "Show archived (1)")
	waitJS(t, tab, "the archived chats shown", jsSidebarGroups+` === `+jsonString(wantArchived+" | Archived: yesterday chat"))
	screenshot(t, tab, "sidebar-archived.png")

	// The store keeps it: a reload, and the REST list, say the same.
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if got := eval[string](t, tab, jsSidebarGroups); got != wantArchived {
		t.Errorf("after a reload the sidebar reads %q, want %q", got, wantArchived)
	}
	var list struct{ Conversations []agent.Conversation }
	ts.call(t, "GET", "/agentik/conversations", "", 200, &list)
	var titles []string
	for _, c := range list.Conversations {
		mark := ""
		if c.Pinned {
			mark += "+pinned"
		}
		if c.Archived {
			mark += "+archived"
		}
		titles = append(titles, c.Title+mark)
	}
	if got, want := strings.Join(titles, ", "), "old chat+pinned, today chat, three days ago, yesterday chat+archived"; got != want {
		t.Errorf("GET /agentik/conversations lists %s, want %s", got, want)
	}

	// A new answer moves a chat to Today, below the pinned one.
	var three string
	for _, c := range list.Conversations {
		if c.Title == "three days ago" {
			three = c.ID
		}
	}
	sendIdle(t, ts, three, "hello again")
	waitJS(t, tab, "the answered chat under Today", jsSidebarGroups+` === `+jsonString("Pinned: old chat | Today: three days ago, today chat"))

	// Restored from the archive (its pressed Archive button), it is back
	// under its date, in every tab and after a reload; the archive,
	// empty, closes.
	click(t, tab, "Show archived (1)")
	waitJS(t, tab, "the archive", jsSidebarGroups+` === `+jsonString("Pinned: old chat | Today: three days ago, today chat | Archived: yesterday chat"))
	clickIn(t, tab, row("yesterday chat"), "Archive")
	wantRestored := "Pinned: old chat | Today: three days ago, today chat | Yesterday: yesterday chat"
	waitJS(t, tab, "the restored chat under Yesterday", jsSidebarGroups+` === `+jsonString(wantRestored))
	waitJS(t, other, "the restored chat under Yesterday in the other tab", jsSidebarGroups+` === `+jsonString(wantRestored))
	if eval[bool](t, tab, `document.querySelector('[data-testid="archived-toggle"]').checkVisibility()`) {
		t.Error("the archive toggle shows with nothing archived")
	}
	// The next chat archived leaves the list, as the first did.
	clickIn(t, tab, row("today chat"), "Archive")
	wantNext := "Pinned: old chat | Today: three days ago | Yesterday: yesterday chat"
	waitJS(t, tab, "the next archived chat gone", jsSidebarGroups+` === `+jsonString(wantNext))
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if got := eval[string](t, tab, jsSidebarGroups); got != wantNext {
		t.Errorf("after restoring one, archiving another and a reload the sidebar reads %q, want %q", got, wantNext)
	}

	do(t, tab, chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	click(t, tab, "Open conversations")
	noOverflow(t, tab, "phone, sidebar with groups")
	screenshot(t, tab, "phone-sidebar-groups.png")
}

// clickIn focuses the row's link, as a keyboard user tabbing to it does
// (which shows its Pin and Archive), and clicks its visible control name.
func clickIn(t testing.TB, ctx context.Context, row, name string) {
	t.Helper()
	do(t, ctx, chromedp.Evaluate[chromedp.Void](row+`.querySelector('a').focus()`))
	btn := `[...` + row + `.querySelectorAll('button')].find((b) => b.checkVisibility() && b.getAttribute('aria-label') === ` + jsonString(name) + `)`
	waitJS(t, ctx, name+" in the row", btn)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](btn+`.click()`))
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Imported ChatGPT chats keep their own times: under Older, in the
// export's order, below a chat of today, however late they were imported.
func TestBrowserImportedChatsKeepTheirTimes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.call(t, "POST", "/agentik/conversations", `{"title":"made today"}`, 201, nil)
	sample, err := os.ReadFile("testdata/chatgpt-conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	var res agent.ImportResult
	ts.call(t, "POST", "/agentik/import", string(sample), 201, &res)
	for _, c := range res.Conversations {
		got, err := ts.Convs.Get(t.Context(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.UpdatedAt.Year() > 2024 {
			t.Errorf("%s: updated_at %v, the import's time, not the chat's own", got.Title, got.UpdatedAt)
		}
	}
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	if got, want := eval[string](t, tab, jsSidebarGroups), "Today: made today | Older: Sourdough starter help, Haiku about autumn"; got != want {
		t.Errorf("sidebar:\n got %s\nwant %s", got, want)
	}
}
