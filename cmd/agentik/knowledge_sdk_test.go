package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/knowledge/knowledgetest"
)

// TestKnowledgeOpenAISDK runs the official openai npm SDK against the
// real binary: files.create with a PDF and a DOCX made here,
// vectorStores.create and fileBatches.uploadAndPoll, vectorStores.search,
// and responses.create with the file_search tool: the model is given the
// passage, and the response has a file_search_call item and a
// file_citation annotation naming the file. Another member gets 404 on
// every id; a lying type is a 400 in OpenAI's shape. On SQLite and on
// PostgreSQL, whose keyword ranking is computed from postings in memory
// (store/terms.go).
func TestKnowledgeOpenAISDK(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		knowledgeOpenAISDK(t, filepath.Join(t.TempDir(), "agentik.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		knowledgeOpenAISDK(t, freshSchema(t))
	})
}

func knowledgeOpenAISDK(t *testing.T, db string) {
	tm := startTeam(t, db, "AGENTIK_EMBEDDING_MODEL=fake-embed")
	dir := t.TempDir()
	pdfPath, docxPath := filepath.Join(dir, "handbook.pdf"), filepath.Join(dir, "policy.docx")
	if err := os.WriteFile(pdfPath, knowledgetest.PDF(handbookPages...), 0o600); err != nil {
		t.Fatal(err)
	}
	docx := knowledgetest.DOCX(knowledgetest.Paragraph{Style: "Heading1", Text: "Expenses"}, knowledgetest.Paragraph{Text: "Receipts go to finance within 14 days."})
	if err := os.WriteFile(docxPath, docx, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "knowledge_sdk.mjs"), pdfPath, docxPath)
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+tm.p.addr, "AGENTIK_KEY="+tm.ann.key, "OTHER_KEY="+tm.bob.key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\nagentik logs:\n%s", err, stderr.String(), tm.p.logs)
	}
	var got struct {
		Created struct {
			PDF struct {
				ID, Object, Filename string
				Bytes                int
			}
			DOCX struct{ ID, Filename string }
		}
		Listed []string
		Batch  struct {
			Status, Object string
			Counts         map[string]int
		}
		Store struct {
			ID, Status string
			Counts     map[string]int
		}
		StoreFiles []struct{ ID, Status string } `json:"store_files"`
		Search     []struct {
			FileID     string `json:"file_id"`
			Filename   string
			Score      float64
			Text       string
			Attributes map[string]any
		}
		Response struct {
			Status string
			Call   *struct {
				Status  string
				Queries []string
			}
			Text        string
			Annotations []struct {
				Type     string
				FileID   string `json:"file_id"`
				Filename string
			}
		}
		Retrieved []struct {
			Type   string
			FileID string `json:"file_id"`
		}
		Refused map[string]int
		Bad     *struct {
			Status        int
			Type, Message string
		}
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	pdfID := got.Created.PDF.ID
	if !strings.HasPrefix(pdfID, "file-") || got.Created.PDF.Object != "file" || got.Created.PDF.Filename != "handbook.pdf" || got.Created.DOCX.Filename != "policy.docx" || len(got.Listed) != 2 {
		t.Errorf("files: %+v listed %v", got.Created, got.Listed)
	}
	if got.Batch.Status != "completed" || got.Batch.Counts["completed"] != 2 || got.Batch.Object != "vector_store.files_batch" {
		t.Errorf("batch: %+v", got.Batch)
	}
	if got.Store.Status != "completed" || got.Store.Counts["total"] != 2 || len(got.StoreFiles) != 2 {
		t.Errorf("store: %+v files %+v", got.Store, got.StoreFiles)
	}
	if len(got.Search) == 0 || got.Search[0].FileID != pdfID || !strings.Contains(got.Search[0].Text, "30 days of paid leave") || got.Search[0].Score <= 0 || got.Search[0].Attributes["page"] != 2.0 {
		t.Errorf("search: %+v", got.Search)
	}
	r := got.Response
	if r.Status != "completed" || r.Call == nil || r.Call.Status != "completed" || fmt.Sprint(r.Call.Queries) != "[paid leave]" {
		t.Errorf("response: %+v", r)
	}
	if len(r.Annotations) == 0 || r.Annotations[0].Type != "file_citation" || r.Annotations[0].FileID != pdfID || r.Annotations[0].Filename != "handbook.pdf" {
		t.Errorf("annotations: %+v", r.Annotations)
	}
	if len(got.Retrieved) == 0 || got.Retrieved[0].FileID != pdfID {
		t.Errorf("retrieved annotations: %+v", got.Retrieved)
	}
	if !givenPassage(tm, "30 days of paid leave") {
		t.Errorf("the model was not given the passage")
	}
	for name, code := range got.Refused {
		if code != 404 {
			t.Errorf("bob's %s: %d, want 404", name, code)
		}
	}
	if len(got.Refused) != 5 {
		t.Errorf("refused: %v", got.Refused)
	}
	// The base as an MCP resource, for ann only.
	mcpCmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "knowledge_mcp.mjs"), got.Store.ID)
	mcpCmd.Env = cmd.Env
	mcpCmd.Stderr = &stderr
	mcpOut, err := mcpCmd.Output()
	if err != nil {
		t.Fatalf("node (mcp): %v\n%s", err, stderr.String())
	}
	var res struct {
		AnnList []string `json:"ann_list"`
		AnnRead string   `json:"ann_read"`
		BobList []string `json:"bob_list"`
		BobRead any      `json:"bob_read"`
	}
	if err := json.Unmarshal(mcpOut, &res); err != nil {
		t.Fatalf("%v: %s", err, mcpOut)
	}
	uri := "agentik://knowledge/" + got.Store.ID
	if !slices.Contains(res.AnnList, uri) || !strings.Contains(res.AnnRead, "handbook.pdf (application/pdf, processed") {
		t.Errorf("ann's MCP resources: %+v", res)
	}
	if slices.Contains(res.BobList, uri) || res.BobRead == "read" {
		t.Errorf("bob's MCP resources: %+v", res)
	}

	if got.Bad == nil || got.Bad.Status != 400 || got.Bad.Type != "invalid_request_error" || !strings.Contains(got.Bad.Message, "not one") {
		t.Errorf("a lying type: %+v", got.Bad)
	}
}
