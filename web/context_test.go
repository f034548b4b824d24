package web

import (
	"strings"
	"testing"

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
	if got := strings.TrimSpace(byID(doc, "summary-label").Text()); got != "12 earlier messages summarized" {
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
	if SummaryLabel(1) != "1 earlier message summarized" {
		t.Error(SummaryLabel(1))
	}
}
