package web

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentik/agentik/internal/agent"
)

func TestSummaryDividerAndGauge(t *testing.T) {
	p := basePage()
	msgs := []agent.Message{
		{Type: agent.MessageUser, ID: "u", Seq: 1, Content: []agent.Content{agent.Text("hi")}},
		{Type: agent.MessageSummary, ID: "s", Seq: 2, Summary: "they said <b>hi</b>", Replaces: 12, TokensBefore: 7000, TokensAfter: 900},
	}
	p.Chat = NewChatView(agent.Conversation{ID: "c", Context: &agent.ContextSize{Tokens: 5210, Window: 8192}}, msgs, 0)
	doc := render(t, p)
	div := byID(doc, "summary-divider")
	if div.Length() != 1 || div.AttrOr("data-id", "") != "s" || div.AttrOr("data-seq", "") != "2" {
		t.Fatalf("divider %d, attrs %v", div.Length(), div.Nodes)
	}
	if got := strings.TrimSpace(byID(doc, "summary-label").Text()); got != "Summary of 12 earlier messages" {
		t.Errorf("label %q", got)
	}
	if got := byID(doc, "summary-body").Text(); got != "they said <b>hi</b>" || byID(doc, "summary-body").Find("b").Length() != 0 {
		t.Errorf("summary body %q", got)
	}
	if _, open := div.Find("details").Attr("open"); open {
		t.Error("the divider starts expanded")
	}
	g := byID(doc, "context-gauge")
	if _, hidden := g.Attr("hidden"); hidden {
		t.Error("gauge hidden with a context")
	}
	if got := byID(doc, "context-label").Text(); got != "5.2k / 8.2k tokens" {
		t.Errorf("gauge label %q", got)
	}
	if m := g.Find("meter"); m.AttrOr("value", "") != "5210" || m.AttrOr("max", "") != "8192" {
		t.Errorf("meter value %q max %q", m.AttrOr("value", ""), m.AttrOr("max", ""))
	}

	p.Chat = NewChatView(agent.Conversation{ID: "c"}, msgs[:1], 0)
	if _, hidden := byID(render(t, p), "context-gauge").Attr("hidden"); !hidden {
		t.Error("gauge shown before any model call")
	}
	for _, c := range []struct {
		n           int
		first, last string
		single      bool
		want        string
	}{
		{1, "", "", false, "Summary of 1 earlier message"},
		{2, "Plan a trip", "Plan a trip", true, `Summary of 2 earlier messages: "Plan a trip"`},
		{6, "Plan a trip", "And the weather?", false, `Summary of 6 earlier messages, from "Plan a trip" to "And the weather?"`},
	} {
		if got := SummaryLabel(c.n, c.first, c.last, c.single); got != c.want {
			t.Errorf("SummaryLabel(%d, %q, %q, %v) = %q, want %q", c.n, c.first, c.last, c.single, got, c.want)
		}
	}
}

// A compaction during a turn is stored after that turn's question; its
// divider shows before the question, between the turns, naming the span.
func TestSummaryDividerBetweenTurns(t *testing.T) {
	p := basePage()
	msgs := []agent.Message{
		{Type: agent.MessageUser, ID: "u1", Seq: 1, Content: []agent.Content{agent.Text("Plan a trip to Lisbon")}},
		{Type: agent.MessageAssistant, ID: "a1", Seq: 2, Content: []agent.Content{agent.Text("Sure.")}},
		{Type: agent.MessageUser, ID: "u2", Seq: 3, Content: []agent.Content{agent.Text("And the weather?")}},
		{Type: agent.MessageAssistant, ID: "a2", Seq: 4, Content: []agent.Content{agent.Text("Sunny.")}},
		{Type: agent.MessageUser, ID: "u3", Seq: 5, Content: []agent.Content{agent.Text("Book it")}},
		{Type: agent.MessageSummary, ID: "s", Seq: 6, Summary: "a trip", Replaces: 4, KeptID: "u3", FirstID: "u1", LastID: "u2", FirstText: "Plan a trip to Lisbon", LastText: "And the weather?"},
		{Type: agent.MessageAssistant, ID: "a3", Seq: 7, Content: []agent.Content{agent.Text("Booked.")}},
	}
	p.Chat = NewChatView(agent.Conversation{ID: "c"}, msgs, 0)
	doc := render(t, p)
	var order []string
	byID(doc, "messages").Children().Each(func(_ int, s *goquery.Selection) { order = append(order, s.AttrOr("data-id", "")) })
	if got := strings.Join(order, " "); got != "u1 a1 u2 a2 s u3 a3" {
		t.Errorf("order %q", got)
	}
	if got := strings.TrimSpace(byID(doc, "summary-label").Text()); got != `Summary of 4 earlier messages, from "Plan a trip to Lisbon" to "And the weather?"` {
		t.Errorf("label %q", got)
	}
}
