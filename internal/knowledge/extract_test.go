package knowledge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/knowledge"
	"github.com/agentik/agentik/internal/knowledge/knowledgetest"
)

// TestExtractKeepsPositions: each format's text comes out in chunks that
// keep the page (PDF) or heading (Markdown, HTML, DOCX, CSV) they are
// from.
func TestExtractKeepsPositions(t *testing.T) {
	x := knowledge.Extractor{}
	cases := []struct {
		name, mt string
		data     []byte
		want     agent.Chunk // a chunk that must be there (Text: a substring)
	}{
		{"a.pdf", "", knowledgetest.PDF("Welcome to the handbook", "Holidays\nEvery member has 30 days of leave."), agent.Chunk{Page: 2, Text: "Every member has 30 days of leave."}},
		{"a.docx", "", knowledgetest.DOCX(knowledgetest.Paragraph{Style: "Heading1", Text: "Expenses"}, knowledgetest.Paragraph{Text: "Receipts go to finance within 14 days."}),
			agent.Chunk{Heading: "Expenses", Text: "Receipts go to finance"}},
		{"a.md", "", []byte("# Intro\n\nhello\n\n## Travel\n\nTrains are preferred over planes.\n"), agent.Chunk{Heading: "Travel", Text: "Trains are preferred"}},
		{"a.html", "text/html", []byte("<html><head><script>var x=1</script></head><body><h2>Office</h2><p>The office opens at <b>8</b>.</p></body></html>"), agent.Chunk{Heading: "Office", Text: "The office opens at 8 ."}},
		{"a.csv", "", []byte("city,team\nOslo,platform\n"), agent.Chunk{Heading: "city, team", Text: "city: Oslo; team: platform"}},
		{"a.json", "", []byte(`{"policy": "remote first"}`), agent.Chunk{Text: "remote first"}},
		{"a.go", "", []byte("package main\n\nfunc main() {}\n"), agent.Chunk{Text: "func main() {}"}},
		{"notes.txt", "text/plain", []byte("first paragraph\n\nsecond paragraph"), agent.Chunk{Text: "second paragraph"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mt, err := x.Detect(c.name, c.mt, c.data)
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := x.Extract(context.Background(), c.name, mt, c.data)
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range chunks {
				if ch.Page == c.want.Page && ch.Heading == c.want.Heading && strings.Contains(ch.Text, c.want.Text) {
					return
				}
			}
			t.Fatalf("%s (%s): no chunk %+v in %+v", c.name, mt, c.want, chunks)
		})
	}
}

// TestExtractBadInput: what cannot be read is refused at upload (Detect)
// or fails with a reason (Extract), never half-read.
func TestExtractBadInput(t *testing.T) {
	x := knowledge.Extractor{}
	detect := []struct {
		name, mt string
		data     []byte
		want     string
	}{
		{"fake.pdf", "application/pdf", []byte("hello, I am text"), "not one"},
		{"fake.docx", "", []byte("hello"), "not a ZIP"},
		{"x.bin", "", []byte{0, 1, 2, 3, 0xff}, "unknown"},
		{"lies.txt", "text/plain", []byte{'a', 0, 0xff, 0xfe}, "binary"},
		{"image.png", "image/png", []byte("\x89PNG\r\n"), "does not read"},
		{"doc.txt", "text/plain", knowledgetest.PDF("x"), "holds a PDF"},
	}
	for _, c := range detect {
		_, err := x.Detect(c.name, c.mt, c.data)
		if agent.ErrorCode(err) != agent.CodeBadRequest || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Detect(%s) = %v, want bad_request with %q", c.name, err, c.want)
		}
	}
	extract := []struct {
		name, mt string
		data     []byte
		want     string
	}{
		{"scan.pdf", knowledge.TypePDF, knowledgetest.PDF("", ""), "no text layer"},
		{"locked.pdf", knowledge.TypePDF, knowledgetest.EncryptedPDF(), "encrypted PDF"},
		{"broken.pdf", knowledge.TypePDF, []byte("%PDF-1.4\nnothing else"), "not a readable PDF"},
		{"bomb.docx", knowledge.TypeDOCX, knowledgetest.ZipBomb(knowledge.MaxDOCXXML + 1), "zip bomb"},
		{"empty.docx", knowledge.TypeDOCX, knowledgetest.ZipBomb(0)[:0], "not a readable ZIP"},
		{"bad.json", knowledge.TypeJSON, []byte("{"), "not valid JSON"},
	}
	for _, c := range extract {
		_, err := x.Extract(context.Background(), c.name, c.mt, c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Extract(%s) = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestChunksFollowPages: a long document is cut at page boundaries and
// within the size bound.
func TestChunksFollowPages(t *testing.T) {
	var pages []string
	for i := range 30 {
		pages = append(pages, strings.Repeat("word"+string(rune('a'+i%26))+" ", 300))
	}
	chunks, err := knowledge.Extractor{}.Extract(context.Background(), "long.pdf", knowledge.TypePDF, knowledgetest.PDF(pages...))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, c := range chunks {
		if len(c.Text) > 2000 {
			t.Fatalf("chunk of %d bytes", len(c.Text))
		}
		seen[c.Page] = true
	}
	if len(seen) != 30 {
		t.Fatalf("pages seen: %d, want 30", len(seen))
	}
}
