package web

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentik/agentik/internal/agent"
)

func render(t *testing.T, p Page) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	if err := Layout(p).Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	// The <template> elements are inert in a browser (TestTemplates covers
	// them); the page's content is the rest.
	doc.Find("template").Remove()
	return doc
}

func byID(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}

func basePage() Page {
	return Page{
		Title: "agentik", Nonce: "n0nce", ScriptURL: "/assets/app.abc.js", StyleURL: "/assets/app.abc.css", IconURL: "/assets/icon.abc.svg",
		ModelName: "qwen3:8b", ModelConfigured: true,
	}
}

func boot(t *testing.T, doc *goquery.Document) Boot {
	t.Helper()
	s := doc.Find("script#boot")
	if got := s.AttrOr("type", ""); got != "application/json" {
		t.Fatalf("boot script type = %q", got)
	}
	var b Boot
	if err := json.Unmarshal([]byte(s.Text()), &b); err != nil {
		t.Fatalf("boot json: %v", err)
	}
	return b
}

func TestNewChatPage(t *testing.T) {
	p := basePage()
	p.Conversations = ConversationItems([]agent.Conversation{{ID: "a", Title: "First"}, {ID: "b", Running: true, Temp: true, Waiting: []string{"call1"}}}, "")
	doc := render(t, p)

	if got := byID(doc, "empty-state").Length(); got != 1 {
		t.Errorf("empty-state count = %d, want 1", got)
	}
	if _, hidden := doc.Find("#chat-actions").Attr("hidden"); !hidden {
		t.Error("rename/delete shown on the new-chat page")
	}
	if got := byID(doc, "no-model-banner").Length(); got != 0 {
		t.Errorf("no-model banner shown with a model configured")
	}
	if got := strings.TrimSpace(byID(doc, "model").Text()); got != "qwen3:8b" {
		t.Errorf("model = %q", got)
	}
	items := byID(doc, "conversation-item")
	if items.Length() != 2 {
		t.Fatalf("conversation items = %d, want 2", items.Length())
	}
	second := items.Eq(1)
	if got := second.Find(`[data-testid="conversation-title"]`).Text(); got != Untitled {
		t.Errorf("untitled conversation shows %q, want %q", got, Untitled)
	}
	if second.AttrOr("data-running", "") != "true" || second.AttrOr("data-temp", "") != "true" {
		t.Errorf("running/temp attributes missing: %v", second.Nodes[0].Attr)
	}
	if second.AttrOr("data-waiting", "") != "true" || items.Eq(0).AttrOr("data-waiting", "") != "false" {
		t.Errorf("data-waiting %q and %q, want true for the conversation with a waiting call only", second.AttrOr("data-waiting", ""), items.Eq(0).AttrOr("data-waiting", ""))
	}
	// Both words are in the markup; the row's data-input picks the one
	// shown (app.css), "Needs input" for a question or a sign-in.
	if got := strings.TrimSpace(second.Find(`[data-testid="waiting-badge"] .waiting-approval`).Text()); got != "Needs approval" || second.AttrOr("data-input", "") != "false" {
		t.Errorf("waiting badge %q, data-input %q", got, second.AttrOr("data-input", ""))
	}
	if got := strings.TrimSpace(second.Find(`[data-testid="waiting-badge"] .waiting-input`).Text()); got != "Needs input" {
		t.Errorf("input badge %q", got)
	}
	if got := second.Find("a").AttrOr("href", ""); got != "/c/b" {
		t.Errorf("href = %q", got)
	}
	if n := doc.Find(`[aria-current="page"]`).Length(); n != 0 {
		t.Errorf("aria-current on %d items, want 0", n)
	}
	script := doc.Find(`script[src]`)
	if script.AttrOr("src", "") != "/assets/app.abc.js" || script.AttrOr("nonce", "") != "n0nce" {
		t.Errorf("bundle script = %v", script.Nodes[0].Attr)
	}
	if got := doc.Find("script#boot").AttrOr("nonce", ""); got != "n0nce" {
		t.Errorf("boot nonce = %q", got)
	}
	b := boot(t, doc)
	if b.Conversation != nil || !b.ModelConfigured {
		t.Errorf("boot = %+v", b)
	}
	if got := byID(doc, "send").Length() + byID(doc, "prompt").Length(); got != 2 {
		t.Errorf("composer incomplete")
	}
	if doc.Find(`label[for="prompt"]`).Length() != 1 {
		t.Error("prompt has no label")
	}
}

func TestNoModelBanner(t *testing.T) {
	p := basePage()
	p.ModelConfigured, p.ModelName = false, ""
	doc := render(t, p)
	banner := byID(doc, "no-model-banner")
	if banner.Length() != 1 {
		t.Fatal("no banner without a model")
	}
	for _, v := range []string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "Ollama"} {
		if !strings.Contains(banner.Text(), v) {
			t.Errorf("banner does not mention %s", v)
		}
	}
	if boot(t, doc).ModelConfigured {
		t.Error("boot says a model is configured")
	}
}

func date(s int) time.Time { return time.Date(2025, 1, 1, 0, 0, s, 0, time.UTC) }

func history() []agent.Message {
	return []agent.Message{
		{Type: agent.MessageUser, ID: "u1", Seq: 3, Date: date(1), ClientID: "cl-1", Content: []agent.Content{agent.Text("What is 2+2?")}},
		{Type: agent.MessageToolCall, ID: "t1", Seq: 7, Date: date(2), CallID: "call_1", Name: "calc__add", Arguments: `{"a":2,"b":2}`},
		{Type: agent.MessageToolResult, ID: "r1", Seq: 9, Date: date(3), CallID: "call_1", Name: "calc__add", Result: `{"sum":4}`},
		{Type: agent.MessageAssistant, ID: "a1", Seq: 15, Date: date(4), Content: []agent.Content{agent.Text("It is **4**.")}, Reasoning: "Add them.",
			Usage: &agent.Usage{PromptTokens: 1200, CompletionTokens: 34, TotalTokens: 1234}},
		{Type: agent.MessageUser, ID: "u2", Seq: 20, Date: date(5), Content: []agent.Content{agent.Text("Tell me a story")}},
		{Type: agent.MessageAssistant, ID: "a2", Seq: 30, Date: date(6), Content: []agent.Content{agent.Text("Once upon")}, Interrupted: true},
		{Type: agent.MessageToolResult, ID: "r9", Seq: 31, Date: date(7), CallID: "orphan", Name: "x__y", Result: "boom", IsError: true},
		{Type: agent.MessageError, ID: "e1", Seq: 32, Date: date(8), Error: "restart", Code: agent.CodeInterruptedByRestart},
		{Type: "future_kind", ID: "f1", Seq: 33, Date: date(9)},
	}
}

func TestConversationPage(t *testing.T) {
	p := basePage()
	conv := agent.Conversation{ID: "c1", Title: "Maths", Running: true, TurnSeq: 34}
	p.Conversations = ConversationItems([]agent.Conversation{conv, {ID: "c2", Title: "Other"}}, "c1")
	p.Chat = NewChatView(conv, history(), 0)
	doc := render(t, p)

	if byID(doc, "empty-state").Length() != 0 {
		t.Error("empty state shown with history")
	}
	if got := byID(doc, "chat-title").Text(); got != "Maths" {
		t.Errorf("title = %q", got)
	}
	if got := doc.Find(`[aria-current="page"]`).Parent().AttrOr("data-id", ""); got != "c1" {
		t.Errorf("current item = %q, want c1", got)
	}
	thread := byID(doc, "messages")
	var ids []string
	thread.Children().Each(func(_ int, s *goquery.Selection) { ids = append(ids, s.AttrOr("data-id", "")) })
	if got, want := strings.Join(ids, ","), "u1,t1,a1,u2,a2,r9,e1,f1"; got != want {
		t.Errorf("thread ids = %s, want %s", got, want)
	}
	u1 := thread.Find(`[data-id="u1"]`)
	if u1.AttrOr("data-seq", "") != "3" || u1.AttrOr("data-client-id", "") != "cl-1" || strings.TrimSpace(u1.Find(".user-text").Text()) != "What is 2+2?" {
		t.Errorf("user message wrong: %v %q", u1.Nodes[0].Attr, u1.Text())
	}
	card := thread.Find(`[data-testid="tool-card"][data-call-id="call_1"]`)
	if card.Length() != 1 {
		t.Fatalf("tool cards for call_1 = %d, want 1 (call and result merged)", card.Length())
	}
	if card.AttrOr("data-result-id", "") != "r1" || card.AttrOr("data-state", "") != "done" {
		t.Errorf("card attrs = %v", card.Nodes[0].Attr)
	}
	if got := card.Find(`[data-testid="tool-arguments"]`).Text(); got != "{\n  \"a\": 2,\n  \"b\": 2\n}" {
		t.Errorf("arguments not pretty-printed: %q", got)
	}
	if got := card.Find(`[data-testid="tool-result"]`).Text(); !strings.Contains(got, `"sum": 4`) {
		t.Errorf("result = %q", got)
	}
	a1 := thread.Find(`[data-id="a1"]`)
	if got := a1.Find(`[data-testid="usage"]`).Text(); got != "1,234 tokens · 1,200 in · 34 out" {
		t.Errorf("usage = %q", got)
	}
	if got := a1.Find(`[data-testid="reasoning"] .reasoning-body`).Text(); got != "Add them." {
		t.Errorf("reasoning = %q", got)
	}
	if _, open := a1.Find("details").Attr("open"); open {
		t.Error("reasoning open by default")
	}
	if thread.Find(`[data-id="a2"] [data-testid="interrupted"]`).Length() != 1 {
		t.Error("interrupted answer not marked")
	}
	orphan := thread.Find(`[data-call-id="orphan"]`)
	if orphan.AttrOr("data-state", "") != "error" || orphan.Find(`[data-testid="tool-result"]`).Text() != "boom" {
		t.Errorf("orphan error result: %v", orphan.Nodes[0].Attr)
	}
	if _, open := orphan.Find("details").Attr("open"); !open {
		t.Error("an error result should be open")
	}
	if got := thread.Find(`[data-id="e1"]`).Text(); !strings.Contains(got, "server restart") || !strings.Contains(got, "interrupted_by_restart") {
		t.Errorf("restart error = %q", got)
	}
	if got := thread.Find(`[data-id="f1"]`).Text(); !strings.Contains(got, "future_kind") {
		t.Errorf("unknown message = %q", got)
	}
	if _, hidden := byID(doc, "stop").Attr("hidden"); hidden {
		t.Error("stop hidden while running")
	}
	if _, hidden := byID(doc, "send").Attr("hidden"); !hidden {
		t.Error("send shown while running")
	}
	b := boot(t, doc)
	want := BootConversation{ID: "c1", Title: "Maths", Agent: "agentik", Running: true, TurnSeq: 34, LastSeq: 33}
	if b.Conversation == nil || *b.Conversation != want {
		t.Errorf("boot conversation = %+v, want %+v", b.Conversation, want)
	}
}

func TestUntrustedTextStaysText(t *testing.T) {
	p := basePage()
	evil := `<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a>`
	conv := agent.Conversation{ID: `c"><script>alert(4)</script>`, Title: evil}
	p.Conversations = ConversationItems([]agent.Conversation{conv}, conv.ID)
	p.Chat = NewChatView(conv, []agent.Message{
		{Type: agent.MessageAssistant, ID: "a", Seq: 1, Content: []agent.Content{agent.Text(evil),
			{Type: agent.ContentImage, Mime: "image/svg+xml", Data: "PHN2Zz4="},
			{Type: agent.ContentImage, Mime: "image/png", Data: `x" onerror="alert(5)`}}},
		{Type: agent.MessageToolCall, ID: "t", Seq: 2, CallID: "c", Name: evil, Arguments: evil},
	}, 0)
	p.ToolServers = []agent.ToolServer{{Name: evil, State: agent.ToolServerFailed, Error: evil}}
	doc := render(t, p)

	if n := doc.Find("script").Length(); n != 2 {
		t.Errorf("scripts = %d, want 2 (bundle and boot)", n)
	}
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Nodes[0].Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") {
				t.Errorf("event handler attribute %s on <%s>", a.Key, s.Nodes[0].Data)
			}
		}
	})
	if n := doc.Find(`a[href^="javascript:"]`).Length(); n != 0 {
		t.Errorf("javascript: links = %d", n)
	}
	if n := doc.Find(".msg-image").Length(); n != 0 {
		t.Errorf("unsafe images rendered: %d", n)
	}
	if got := doc.Find(`[data-id="a"] .md`).Text(); got != evil {
		t.Errorf("answer text = %q, want it verbatim", got)
	}
	var b Boot
	if err := json.Unmarshal([]byte(doc.Find("script#boot").Text()), &b); err != nil || b.Conversation.Title != evil {
		t.Errorf("boot JSON did not survive: %v", err)
	}
}

func TestNotFoundPage(t *testing.T) {
	p := basePage()
	p.NotFound = true
	doc := render(t, p)
	if byID(doc, "not-found").Length() != 1 {
		t.Error("no not-found notice")
	}
	if byID(doc, "composer").Length() != 0 {
		t.Error("composer on a not-found page")
	}
}

func TestToolServers(t *testing.T) {
	p := basePage()
	p.ToolServers = []agent.ToolServer{
		{Name: "files", Transport: "stdio", State: agent.ToolServerReady, Tools: []string{"files__read", "files__write"}},
		{Name: "web", Transport: "http", State: agent.ToolServerFailed, Error: "connection refused"},
	}
	doc := render(t, p)
	panel := byID(doc, "tool-servers")
	if _, hidden := panel.Attr("hidden"); hidden {
		t.Fatal("tool servers hidden")
	}
	if panel.AttrOr("data-state", "") != "failed" {
		t.Errorf("panel state = %q, want failed", panel.AttrOr("data-state", ""))
	}
	if got := panel.Find(".tools-count").Text(); got != "1/2 ready" {
		t.Errorf("count = %q", got)
	}
	rows := byID(doc, "tool-server")
	if rows.Length() != 2 || rows.Eq(0).Find(".ts-tools").Text() != "2 tools" || rows.Eq(1).Find(".ts-error").Text() != "connection refused" {
		t.Errorf("rows = %q", rows.Text())
	}
}

func TestOmittedNote(t *testing.T) {
	p := basePage()
	p.Chat = NewChatView(agent.Conversation{ID: "c"}, history()[:1], 42)
	doc := render(t, p)
	btn := byID(doc, "load-earlier")
	if got := strings.TrimSpace(btn.Text()); got != "Show 42 earlier messages" {
		t.Errorf("load-earlier button = %q", got)
	}
	if n, _ := btn.Attr("data-omitted"); n != "42" {
		t.Errorf("data-omitted = %q", n)
	}
}

func TestFormatUsage(t *testing.T) {
	for _, tc := range []struct {
		u    *agent.Usage
		want string
	}{
		{nil, ""},
		{&agent.Usage{}, "0 tokens · 0 in · 0 out"},
		{&agent.Usage{PromptTokens: 999, CompletionTokens: 1000, TotalTokens: 1234567}, "1,234,567 tokens · 999 in · 1,000 out"},
	} {
		if got := FormatUsage(tc.u); got != tc.want {
			t.Errorf("FormatUsage(%+v) = %q, want %q", tc.u, got, tc.want)
		}
	}
}

func TestPrettyJSON(t *testing.T) {
	for in, want := range map[string]string{
		"":            "",
		"not json":    "not json",
		`{"a":[1,2]}`: "{\n  \"a\": [\n    1,\n    2\n  ]\n}",
	} {
		if got := PrettyJSON(in); got != want {
			t.Errorf("PrettyJSON(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTurnUsage: a turn's usage is the sum of its answers' and shows once,
// on its last answer.
func TestTurnUsage(t *testing.T) {
	u := func(p, c int) *agent.Usage {
		return &agent.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
	}
	msgs := []agent.Message{
		{Type: agent.MessageUser, ID: "u1", Seq: 1},
		{Type: agent.MessageAssistant, ID: "a1", Seq: 2, Reasoning: "think", Usage: u(10, 5)},
		{Type: agent.MessageToolCall, ID: "t1", Seq: 3, CallID: "c1", Name: "x__y", Arguments: "{}"},
		{Type: agent.MessageToolResult, ID: "r1", Seq: 4, CallID: "c1", Name: "x__y", Result: "ok"},
		{Type: agent.MessageAssistant, ID: "a2", Seq: 5, Content: []agent.Content{agent.Text("done")}, Usage: u(20, 7)},
		{Type: agent.MessageUser, ID: "u2", Seq: 6},
		{Type: agent.MessageAssistant, ID: "a3", Seq: 7, Content: []agent.Content{agent.Text("hi")}, Usage: u(3, 1)},
	}
	v := NewChatView(agent.Conversation{ID: "c"}, msgs, 0)
	got := map[string]string{}
	for _, m := range v.Messages {
		if m.Kind == KindAssistant {
			got[m.ID] = m.Usage
		}
	}
	want := map[string]string{"a1": "", "a2": FormatUsage(u(30, 12)), "a3": FormatUsage(u(3, 1))}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s usage %q, want %q", id, got[id], w)
		}
	}
}

func TestRulesOneOwner(t *testing.T) {
	b := Page{}.Boot()
	if got, want := strings.Join(b.Rules.ImageTypes, ","), strings.Join(ImageTypes(), ","); got != want {
		t.Errorf("boot image types = %s, want %s", got, want)
	}
	for _, m := range []MessageView{{Code: agent.CodeInterruptedByRestart, Error: "x"}, {}, {Error: "boom", Code: "model_error"}} {
		want := m.Error
		if t, ok := b.Rules.ErrorTexts[m.Code]; ok && (m.Code != "" || m.Error == "") {
			want = t
		}
		if got := errorText(m); got != want {
			t.Errorf("errorText(%+v) = %q, the rules the JS reads say %q", m, got, want)
		}
	}
	u := &agent.Usage{PromptTokens: 1000, CompletionTokens: 234, TotalTokens: 1234}
	if got, want := FormatUsage(u), strings.NewReplacer("{total}", "1,234", "{prompt}", "1,000", "{completion}", "234").Replace(b.Rules.UsageFormat); got != want {
		t.Errorf("FormatUsage = %q, the format the JS reads gives %q", got, want)
	}
	var buf strings.Builder
	if err := Composer(false, nil).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `accept="`+strings.Join(ImageTypes(), ",")+`,`) {
		t.Errorf("the file input does not accept the image types: %s", buf.String())
	}
	c := agent.Citation{FileName: "a.pdf", Page: 3}
	if got, want := CitationPlace(c), " · "+strings.ReplaceAll(b.Rules.PageFormat, "{page}", "3"); got != want {
		t.Errorf("CitationPlace = %q, the format the JS reads gives %q", got, want)
	}
}

// TestTemplates checks that the page carries, for each kind of thing the JS
// layer adds live, a template rendered by the same component as the first
// paint.
func TestTemplates(t *testing.T) {
	var buf bytes.Buffer
	if err := Layout(Page{}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for id, sel := range map[string]string{
		"tpl-user":         `article.msg-user[data-type="user_message"] .user-text`,
		"tpl-assistant":    `article.msg-assistant .reasoning ~ .msg-body .md`,
		"tpl-tool-running": `article.tool-card[data-state="running"] [data-testid="tool-arguments"] code`,
		"tpl-tool-done":    `article.tool-card[data-state="done"] .tool-result code`,
		"tpl-tool-error":   `article.tool-card[data-state="error"] .tool-pre-error code`,
		"tpl-error":        `article.msg-error .err-code`,
		"tpl-note":         `article.msg-note .note-type`,
		"tpl-conversation": `li.conv-item a.conv-link .conv-title`,
		"tpl-tool-server":  `li.tool-server .ts-count`,
	} {
		tpl := doc.Find("template#" + id)
		if tpl.Length() != 1 {
			t.Errorf("template %s: %d on the page, want 1", id, tpl.Length())
			continue
		}
		if tpl.Find(sel).Length() != 1 {
			t.Errorf("template %s lacks %s: %s", id, sel, must(tpl.Html()))
		}
	}
	for _, sel := range []string{".usage", `[data-testid="interrupted"]`, ".msg-images img"} {
		if doc.Find("template#tpl-assistant "+sel).Length() != 1 {
			t.Errorf("the answer template lacks %s", sel)
		}
	}
}

func must(s string, err error) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// TestMemoryPageNames: the default memory blocks are named for whom they
// are about, and the page says the memory is the chosen agent's.
func TestMemoryPageNames(t *testing.T) {
	p := basePage()
	p.Memory = &MemoryView{Agent: "writer", Agents: []MemoryAgent{{Slug: "agentik", Name: "agentik"}, {Slug: "writer", Name: "Writer"}},
		Blocks: []agent.MemoryBlock{{Label: agent.MemoryHuman, Limit: 100}, {Label: agent.MemoryPersona, Limit: 100}, {Label: "projects", Limit: 100}}}
	doc := render(t, p)
	var got []string
	doc.Find(`[data-testid="memory-label"]`).Each(func(_ int, s *goquery.Selection) { got = append(got, s.Text()) })
	if strings.Join(got, ",") != "About you,About me,projects" {
		t.Errorf("memory labels %q", got)
	}
	if scope := doc.Find(`[data-testid="memory-scope"]`).Text(); !strings.Contains(scope, "Each agent keeps its own memory of you: this is Writer's.") {
		t.Errorf("scope %q", scope)
	}
}
