package agent_test

import (
	"context"
	"encoding/base64"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/knowledge"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/testwait"
)

// countingExtractor is package knowledge's extractor, counting its
// extractions.
type countingExtractor struct {
	knowledge.Extractor
	n atomic.Int32
}

func (c *countingExtractor) Extract(ctx context.Context, name, mediaType string, data []byte) ([]agent.Chunk, error) {
	c.n.Add(1)
	return c.Extractor.Extract(ctx, name, mediaType, data)
}

// TestFileExtractedOnce: a document sent in a message is extracted once,
// though the send inlines its text and its ingestion cuts it into chunks;
// a later message attaching it (processed) and the memory rebuilt after a
// restart read its stored chunks, extracting nothing.
func TestFileExtractedOnce(t *testing.T) {
	ex := &countingExtractor{}
	var files *agent.Files
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) {
		agent.SetExtractor(c.Files, ex)
		files = c.Files
	})
	c := g.create(false)
	send := func(content ...agent.Content) string {
		t.Helper()
		ctx := context.Background()
		sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: content}); err != nil {
			t.Fatal(err)
		}
		return text(untilEnd(t, ctx, sub))
	}
	doc := "# Guide\n\nThe extracted-once word is UMBER-9.\n"
	answer := send(agent.Text("read it"), agent.Content{Type: agent.ContentFile, Name: "guide.md", Mime: "text/markdown", Data: base64.StdEncoding.EncodeToString([]byte(doc))})
	if !strings.Contains(answer, "UMBER-9") {
		t.Fatalf("the model did not read the document: %q", answer)
	}
	id := g.history(c)[0].Content[1].FileID
	testwait.For(t, "the file to be processed", func() bool {
		f, err := files.File(context.Background(), id)
		return err == nil && f.Status == agent.FileProcessed
	})
	if n := ex.n.Load(); n != 1 {
		t.Errorf("the document was extracted %d times by its send and its ingestion, want 1", n)
	}
	if answer := send(agent.Text("again"), agent.Content{Type: agent.ContentFile, FileID: id}); !strings.Contains(answer, "UMBER-9") {
		t.Fatalf("the second message did not give the model the document: %q", answer)
	}
	if n := ex.n.Load(); n != 1 {
		t.Errorf("attaching the processed file extracted it again: %d extractions", n)
	}
	// A send that read the file while it processed, and reaches its
	// chunks only after its ingestion ended (a loaded machine), reads
	// the stored chunks instead of extracting it again.
	stale, err := files.File(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	stale.Status = agent.FileProcessing
	chunks, err := agent.ChunksOf(context.Background(), files, stale)
	if err != nil || len(chunks) == 0 || !strings.Contains(chunks[0].Text, "UMBER-9") {
		t.Fatalf("a stale file's chunks: %v %+v", err, chunks)
	}
	if n := ex.n.Load(); n != 1 {
		t.Errorf("a send holding the file as it was while processing extracted it again after its ingestion: %d extractions", n)
	}
}
