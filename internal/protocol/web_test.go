package protocol

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The browser UI (assets/src) speaks this protocol in JavaScript. Go owns
// the op names: every op the UI sends must be one Check knows, so a
// renamed or misspelt op fails here rather than in a browser.
func TestWebSendsOnlyProtocolOps(t *testing.T) {
	files, err := filepath.Glob("../../assets/src/*.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no UI sources found: %v", err)
	}
	request := regexp.MustCompile(`\.request\(\s*'([a-z_]+)'`)
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range request.FindAllStringSubmatch(string(b), -1) {
			seen++
			c := Command{Op: m[1]}
			if err := c.Check(); err != nil && strings.Contains(err.Error(), "unknown op") {
				t.Errorf("%s sends op %q, which the protocol does not have", filepath.Base(f), m[1])
			}
		}
	}
	if seen < 10 {
		t.Fatalf("found only %d requests in the UI sources; has conn.request been renamed?", seen)
	}
}
