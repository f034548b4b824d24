package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestAuditVerify: agentik audit verify FILE passes on a chain and fails
// on an edited entry, naming it, offline (no server).
func TestAuditVerify(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	prev := ""
	at := time.Date(2026, 1, 31, 9, 0, 0, 0, time.UTC)
	for i := int64(1); i <= 3; i++ {
		e := agent.AuditEntry{Seq: i, At: at.Add(time.Duration(i) * time.Minute), Actor: "local", Action: agent.AuditUserCreated, Target: "u" + string(rune('0'+i)), PrevHash: prev}
		e.Hash = e.Sum()
		prev = e.Hash
		line, _ := json.Marshal(e)
		b.Write(append(line, '\n'))
	}
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.jsonl"), filepath.Join(dir, "bad.jsonl")
	os.WriteFile(good, b.Bytes(), 0o600)
	os.WriteFile(bad, bytes.Replace(b.Bytes(), []byte(`"target":"u2"`), []byte(`"target":"u9"`), 1), 0o600)
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"audit", "verify", good}, func(string) string { return "" }, nil, &out, &errOut); err != nil || !strings.Contains(out.String(), "ok: 3 entries, seq 1 to 3, last hash "+prev) {
		t.Fatalf("verify good: %v %q", err, out.String())
	}
	err := run(context.Background(), []string{"audit", "verify", bad}, func(string) string { return "" }, nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "line 2: entry 2 was altered") {
		t.Fatalf("verify bad: %v", err)
	}
}
