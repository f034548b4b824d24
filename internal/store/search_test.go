package store

import (
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

func assistantRec(cid, text string) *agent.Record {
	return convRec(cid, &agent.Event{Type: agent.EventMessage, Message: &agent.Message{
		Type: agent.MessageAssistant, ID: "msg-" + newID(), ConversationID: cid,
		Content: []agent.Content{agent.Text(text)},
	}})
}

func search(t *testing.T, s *Store, text string) []agent.SearchResult {
	t.Helper()
	q, err := agent.ParseSearch(text, 0)
	if err != nil {
		t.Fatalf("ParseSearch(%q): %v", text, err)
	}
	res, err := s.Search(t.Context(), q)
	if err != nil {
		t.Fatalf("Search(%q): %v", text, err)
	}
	return res
}

func ids(res []agent.SearchResult) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.ConversationID
	}
	return out
}

func TestSearchRankingAndSnippets(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		clk := newClock()
		s := open(t, dsn, Options{Now: clk.now})
		mustAppend(t, s, createdRec("title", "Gardening in winter"), createdRec("body", "Weekend plans"),
			createdRec("other", "Taxes"), createdRec("tool", "Tools"))
		mustAppend(t, s, userRec("title", "what should I plant?", ""), assistantRec("title", "Try garlic."))
		body := assistantRec("body", "Saturday is for <b>gardening</b>, 1 < 2 & the long walk")
		mustAppend(t, s, userRec("body", "any plans?", ""), body, userRec("body", "gardening again, gardening", ""))
		mustAppend(t, s, userRec("other", "nothing about plants", ""))
		mustAppend(t, s, convRec("tool", &agent.Event{Type: agent.EventMessage, Message: &agent.Message{
			Type: agent.MessageToolResult, ID: "tr", ConversationID: "tool", CallID: "c", Name: "x", Result: "gardening results"}}))

		res := search(t, s, "gardening")
		if got, want := strings.Join(ids(res), ","), "title,body"; got != want {
			t.Fatalf("results = %s, want %s (title match first, one per conversation, tool results not searched): %+v", got, want, res)
		}
		if res[0].MessageID != "" || res[0].Snippet != "<mark>Gardening</mark> in winter" || res[0].Title != "Gardening in winter" {
			t.Errorf("title hit = %+v", res[0])
		}
		if res[0].Date.IsZero() || res[1].Date.IsZero() {
			t.Errorf("dates = %v, %v", res[0].Date, res[1].Date)
		}
		// Two gardening words in a short message outrank one in a longer one.
		if res[1].MessageID == "" || res[1].MessageID == body.Event.Event.Message.ID {
			t.Errorf("body hit = %+v, want the message with two matches", res[1])
		}
		if !strings.Contains(res[1].Snippet, "<mark>gardening</mark>") {
			t.Errorf("snippet %q has no marked match", res[1].Snippet)
		}

		// The snippet is escaped text; only the marks are markup.
		res = search(t, s, "saturday walk")
		if len(res) != 1 || res[0].MessageID != body.Event.Event.Message.ID {
			t.Fatalf("saturday walk = %+v", res)
		}
		if sn := res[0].Snippet; !strings.Contains(sn, "1 &lt; 2 &amp; the long") || strings.Contains(sn, "<b>") || !strings.Contains(sn, "<mark>Saturday</mark>") || !strings.Contains(sn, "<mark>walk</mark>") {
			t.Errorf("snippet = %q", sn)
		}

		// The last word is a prefix; every word must match.
		if got := ids(search(t, s, "wint")); len(got) != 1 || got[0] != "title" {
			t.Errorf("prefix wint = %v", got)
		}
		if got := search(t, s, "gardening taxes"); len(got) != 0 {
			t.Errorf("gardening taxes = %+v, want nothing", got)
		}
		if got := ids(search(t, s, "GARLIC")); len(got) != 1 || got[0] != "title" {
			t.Errorf("GARLIC = %v", got)
		}
	})
}

func TestSearchFollowsRenameAndDelete(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		clk := newClock()
		s := open(t, dsn, Options{Now: clk.now})
		mustAppend(t, s, createdRec("c1", "alpha"), createdRec("c2", "beta"))
		mustAppend(t, s, userRec("c2", "zebra crossing", ""))
		clk.advance(time.Second)
		mustAppend(t, s, renamedRec("c1", "gamma"))
		if got := search(t, s, "alpha"); len(got) != 0 {
			t.Errorf("old title still found: %+v", got)
		}
		if got := ids(search(t, s, "gamma")); len(got) != 1 || got[0] != "c1" {
			t.Errorf("new title = %v", got)
		}
		mustAppend(t, s, deletedRec("c2"))
		for _, q := range []string{"beta", "zebra"} {
			if got := search(t, s, q); len(got) != 0 {
				t.Errorf("%s: deleted conversation found: %+v", q, got)
			}
		}
		var n int64
		if err := s.r.Model(&searchRow{}).Where("conversation_id = ?", "c2").Count(&n).Error; err != nil || n != 0 {
			t.Errorf("index rows of the deleted conversation = %d, %v", n, err)
		}
		if !s.postgres {
			// The FTS index itself forgot them (the cascade fires the trigger).
			var m int64
			if err := s.r.Raw("SELECT count(*) FROM search_body WHERE search_body MATCH 'zebra'").Scan(&m).Error; err != nil || m != 0 {
				t.Errorf("fts rows matching zebra = %d, %v", m, err)
			}
		}
	})
}

func TestSearchHostileQueries(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		mustAppend(t, s, createdRec("c1", "quote\" and 'apostrophe' NEAR(x y) title:secret"))
		for _, q := range []string{`"`, `'`, `*`, `"unterminated`, `NEAR(a b)`, `a OR b`, `a AND`, `NOT x`, `-x`, `^x`, `title:secret`,
			`x:*`, `!!`, `a & b | c`, `(((`, `\`, `%_`, `'); DROP TABLE conversation; --`, "\x00", "\x02mark\x03", `<->`, `apostrophe'`} {
			parsed, err := agent.ParseSearch(q, 5)
			if err != nil {
				t.Fatalf("ParseSearch(%q): %v", q, err)
			}
			if _, err := s.Search(t.Context(), parsed); err != nil {
				t.Errorf("Search(%q): %v", q, err)
			}
		}
		if got := ids(search(t, s, `title:secret`)); len(got) != 1 {
			t.Errorf("title:secret is two words, both in the title: %v", got)
		}
		if _, err := s.Conversation(t.Context(), "c1"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSearchIndexesExistingRowsOnOpen(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s, err := Open(t.Context(), dsn, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, createdRec("c1", "old title"))
		mustAppend(t, s, userRec("c1", "ancient message", ""))
		// A database from before the index: no rows, no meta key.
		if err := s.w.Where("1 = 1").Delete(&searchRow{}).Error; err != nil {
			t.Fatal(err)
		}
		if err := s.w.Where("key = ?", metaSearchIndexed).Delete(&metaRow{}).Error; err != nil {
			t.Fatal(err)
		}
		if got := search(t, s, "ancient"); len(got) != 0 {
			t.Fatalf("emptied index still finds %+v", got)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open(t, dsn, Options{})
		for _, q := range []string{"ancient", "old"} {
			if got := ids(search(t, s, q)); len(got) != 1 || got[0] != "c1" {
				t.Errorf("%s after reopen = %v", q, got)
			}
		}
	})
}

func TestSnippet(t *testing.T) {
	t.Parallel()
	q := agent.SearchQuery{Terms: []string{"fox", "jum"}, Prefix: true}
	long := "one two three four five six seven eight nine ten the quick brown Fox jumps over the lazy dog and then some more words follow here at the end"
	for _, c := range []struct{ text, want string }{
		{"the fox", "the \x02fox\x03"},
		{"Fox, jumping!", "\x02Fox\x03, \x02jumping\x03!"},
		{"no match here", "no match here"},
		{long, "…ten the quick brown \x02Fox\x03 \x02jumps\x03 over the lazy dog and then some more words follow…"},
		{"", ""},
	} {
		if got := snippet(c.text, q, 16); got != c.want {
			t.Errorf("snippet(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}
