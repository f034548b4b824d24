package arch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchmarksIsAMap: docs/BENCHMARKS.md shows the current tables with
// their commands in at most 400 lines (issue 47); a session's journal is
// left to git history, not appended.
func TestBenchmarksIsAMap(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 400 {
		t.Errorf("docs/BENCHMARKS.md has %d lines, at most 400: replace an older table with the current one and leave the journal to git history", n)
	}
}
