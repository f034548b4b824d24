package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
	"github.com/agentik/agentik/web"
)

// getPage fetches a page and parses it.
func getPage(t testing.TB, ts *testServer, path string) (*http.Response, *goquery.Document) {
	t.Helper()
	res, err := http.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	doc, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	// The <template> fragments the JS clones are markup, not content.
	doc.Find("template").Remove()
	return res, doc
}

func testid(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}

// waitIdle waits until a conversation's turn has ended.
func waitIdle(t testing.TB, ts *testServer, id string) agent.Conversation {
	t.Helper()
	var c agent.Conversation
	testwait.For(t, "conversation "+id+" to end its turn", func() bool {
		var err error
		if c, err = ts.Runner.Conversation(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return !c.Running
	})
	return c
}

func pageBoot(t testing.TB, doc *goquery.Document) web.Boot {
	t.Helper()
	var b web.Boot
	if err := json.Unmarshal([]byte(doc.Find("script#boot").Text()), &b); err != nil {
		t.Fatalf("boot: %v", err)
	}
	return b
}

var nonceRE = regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9+/=]+)'`)

func TestIndexPage(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	if _, err := ts.Runner.Create(ctx, agent.NewConversation{Title: "Older"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Runner.Create(ctx, agent.NewConversation{Title: "Newer"}); err != nil {
		t.Fatal(err)
	}
	res, doc := getPage(t, ts, "/")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if got := res.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q", got)
	}
	csp := res.Header.Get("Content-Security-Policy")
	m := nonceRE.FindStringSubmatch(csp)
	if m == nil {
		t.Fatalf("CSP without a script nonce: %q", csp)
	}
	for _, d := range []string{"object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'", "img-src 'self' data: blob:"} {
		if !strings.Contains(csp, d) {
			t.Errorf("CSP lacks %q: %q", d, csp)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP allows unsafe sources: %q", csp)
	}
	doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		if s.AttrOr("nonce", "") != m[1] {
			t.Errorf("script %v lacks the CSP nonce", s.Nodes[0].Attr)
		}
	})
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control = %q", res.Header.Get("Cache-Control"))
	}
	var titles []string
	testid(doc, "conversation-title").Each(func(_ int, s *goquery.Selection) { titles = append(titles, s.Text()) })
	if got := strings.Join(titles, ","); got != "Newer,Older" {
		t.Errorf("sidebar = %s, want Newer,Older", got)
	}
	if testid(doc, "empty-state").Length() != 1 {
		t.Error("no empty state on /")
	}
	if testid(doc, "no-model-banner").Length() != 0 {
		t.Error("no-model banner with a model")
	}
	if b := pageBoot(t, doc); b.Conversation != nil || !b.ModelConfigured {
		t.Errorf("boot = %+v", b)
	}

	// A second load has another nonce.
	res2, _ := getPage(t, ts, "/")
	if m2 := nonceRE.FindStringSubmatch(res2.Header.Get("Content-Security-Policy")); m2 == nil || m2[1] == m[1] {
		t.Error("nonce reused across responses")
	}
}

func TestChatPageHistory(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	c, err := ts.Runner.Create(ctx, agent.NewConversation{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("hello <b>there</b> [[reasoning]]")}, ClientID: "client-1"}); err != nil {
		t.Fatal(err)
	}
	c = waitIdle(t, ts, c.ID)
	msgs, err := ts.Runner.Messages(ctx, agent.MessageQuery{ConversationID: c.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}

	res, doc := getPage(t, ts, "/c/"+c.ID)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if got, want := testid(doc, "chat-title").Text(), c.Title; got != want || got == "" {
		t.Errorf("title = %q, want the auto title %q", got, want)
	}
	if got := doc.Find(`[data-testid="conversation-item"] a[aria-current="page"]`).Parent().AttrOr("data-id", ""); got != c.ID {
		t.Errorf("current sidebar item = %q", got)
	}
	arts := testid(doc, "messages").Children()
	if arts.Length() != len(msgs) {
		t.Fatalf("rendered %d messages, stored %d", arts.Length(), len(msgs))
	}
	user := arts.Eq(0)
	if user.AttrOr("data-id", "") != msgs[0].ID || user.AttrOr("data-client-id", "") != "client-1" {
		t.Errorf("user message attrs = %v", user.Nodes[0].Attr)
	}
	if got := user.Find(`[data-testid="user-text"]`).Text(); !strings.Contains(got, "hello <b>there</b>") {
		t.Errorf("user text = %q (must be escaped text)", got)
	}
	last := msgs[len(msgs)-1]
	answer := doc.Find(`[data-type="assistant_message"]`)
	if !strings.Contains(answer.Find(".md").Text(), "You said:") {
		t.Errorf("answer = %q", answer.Text())
	}
	if answer.Find(`[data-testid="reasoning"]`).Length() != 1 {
		t.Error("reasoning not rendered")
	}
	if answer.Find(`[data-testid="usage"]`).Length() != 1 {
		t.Error("usage not rendered")
	}
	b := pageBoot(t, doc)
	want := web.BootConversation{ID: c.ID, Title: c.Title, Agent: agent.DefaultAgent, LastSeq: last.Seq}
	if b.Conversation == nil || *b.Conversation != want {
		t.Errorf("boot = %+v, want %+v", b.Conversation, want)
	}
	if got := arts.Last().AttrOr("data-seq", ""); got != strconv.FormatInt(last.Seq, 10) {
		t.Errorf("last data-seq = %s, want %d", got, last.Seq)
	}
}

func TestChatPageRunning(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	c, err := ts.Runner.Create(ctx, agent.NewConversation{Title: "Long"})
	if err != nil {
		t.Fatal(err)
	}
	sent, err := ts.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("[[tokens=200 delay=20ms]]")}})
	if err != nil {
		t.Fatal(err)
	}
	_, doc := getPage(t, ts, "/c/"+c.ID)
	b := pageBoot(t, doc)
	if b.Conversation == nil || !b.Conversation.Running || b.Conversation.TurnSeq != sent.Seq {
		t.Errorf("boot of a running conversation = %+v, want running with turn_seq %d", b.Conversation, sent.Seq)
	}
	if _, hidden := testid(doc, "stop").Attr("hidden"); hidden {
		t.Error("stop button hidden during a turn")
	}
	if got := doc.Find(`[data-testid="conversation-item"][data-id="`+c.ID+`"]`).AttrOr("data-running", ""); got != "true" {
		t.Errorf("sidebar data-running = %q", got)
	}
	if _, err := ts.Runner.Interrupt(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, ts, c.ID)
}

func TestChatPageNotFound(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, path := range []string{"/c/nope", "/c/%3Cscript%3E"} {
		res, doc := getPage(t, ts, path)
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", path, res.StatusCode)
		}
		if testid(doc, "not-found").Length() != 1 {
			t.Errorf("%s: no not-found notice", path)
		}
	}
	res, _ := getPage(t, ts, "/nope")
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("/nope: status %d, want 404", res.StatusCode)
	}
}

func TestPageWithoutModel(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withoutModel())
	_, doc := getPage(t, ts, "/")
	if testid(doc, "no-model-banner").Length() != 1 {
		t.Error("no banner without a model")
	}
	if got := testid(doc, "model").AttrOr("data-configured", ""); got != "false" {
		t.Errorf("model data-configured = %q", got)
	}
	if pageBoot(t, doc).ModelConfigured {
		t.Error("boot says a model is configured")
	}
}

func TestPageAssets(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	_, doc := getPage(t, ts, "/")
	for _, sel := range []string{`script[src]`, `link[rel="stylesheet"]`, `link[rel="icon"]`} {
		s := doc.Find(sel)
		url := s.AttrOr("src", s.AttrOr("href", ""))
		if !regexp.MustCompile(`^/assets/[a-z]+\.[0-9a-f]{12}\.(js|css|svg)$`).MatchString(url) {
			t.Errorf("%s: URL %q is not content-hashed", sel, url)
			continue
		}
		res, err := http.Get(ts.URL + url)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("%s: status %d, Cache-Control %q", url, res.StatusCode, res.Header.Get("Cache-Control"))
		}
	}
}
