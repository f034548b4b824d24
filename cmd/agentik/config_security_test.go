package main

import (
	"io"
	"net/netip"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

func TestTrustedProxiesConfig(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "AGENTIK_TRUSTED_PROXIES" {
				return v
			}
			return ""
		}
	}
	c, err := parseConfig(nil, env("10.0.0.0/8, 192.168.1.7 ,::1"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"), netip.MustParsePrefix("::1/128")}
	if len(c.TrustedProxies) != len(want) {
		t.Fatalf("got %v, want %v", c.TrustedProxies, want)
	}
	for i := range want {
		if c.TrustedProxies[i] != want[i] {
			t.Errorf("proxy %d: %v, want %v", i, c.TrustedProxies[i], want[i])
		}
	}
	if _, err := parseConfig(nil, env("proxy.local"), io.Discard); err == nil || !strings.Contains(err.Error(), "AGENTIK_TRUSTED_PROXIES") {
		t.Errorf("a host name: err %v", err)
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"postgres://app:s3cret@db:5432/agentik?sslmode=disable", "postgres://app:xxxxx@db:5432/agentik?sslmode=disable"},
		{"postgres://db/agentik?password=s3cret&sslmode=require", "postgres://db/agentik?password=xxxxx&sslmode=require"},
		{"https://user:s3cret@llm.example/v1", "https://user:xxxxx@llm.example/v1"},
		{"https://llm.example/openai?api-key=s3cret&api-version=1", "https://llm.example/openai?api-key=xxxxx&api-version=1"},
		{"https://llm.example/v1?key=s3cret", "https://llm.example/v1?key=xxxxx"},
		{"host=db user=app password=s3cret dbname=agentik", "host=db user=app password=xxxxx dbname=agentik"},
		{"http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"},
		{"sqlite:./agentik.db", "sqlite:./agentik.db"},
	}
	for _, tt := range tests {
		if got := redactURL(tt.in); got != tt.want || strings.Contains(got, "s3cret") {
			t.Errorf("redactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestStartupLogHasNoSecrets starts the binary with secrets in its model
// and database URLs and reads its log.
func TestStartupLogHasNoSecrets(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	u := strings.Replace(fakeURL, "http://", "http://user:s3cret-userinfo@", 1) + "?api-key=s3cret-query"
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+u, "OPENAI_MODEL=fake")
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
	if strings.Contains(p.logs.String(), "s3cret") {
		t.Errorf("the log shows a secret:\n%s", p.logs)
	}
	if !strings.Contains(p.logs.String(), "xxxxx") {
		t.Errorf("the log does not show the redacted base URL:\n%s", p.logs)
	}
}
