package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestProvidersFileAndChatModel: agentik started with a providers file of
// two fake endpoints lists their models, and `agentik chat --model` runs
// the conversation on the one it names.
func TestProvidersFileAndChatModel(t *testing.T) {
	t.Parallel()
	fakeA, urlA := llmtest.NewHTTPServer(t, llmtest.WithModels("alpha"))
	fakeB, urlB := llmtest.NewHTTPServer(t, llmtest.WithModels("beta"))
	file := filepath.Join(t.TempDir(), "providers.json")
	body := `{"providers":{"a":{"base_url":"${A_URL}","models":["alpha"]},"b":{"base_url":"` + urlB + `","api_key":"${B_KEY:-none}","models":"auto"}},"default":"a/alpha"}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := start(t, addr, t.TempDir()+"/agentik.db", "AGENTIK_PROVIDERS="+file, "A_URL="+urlA)

	var models struct {
		Models []struct {
			ID        string `json:"id"`
			Available bool   `json:"available"`
		} `json:"models"`
		Default string `json:"default"`
	}
	testwait.For(t, "both providers' models listed", func() bool {
		getJSON(t, p.url("/agentik/models"), &models)
		return len(models.Models) == 2
	})
	if models.Default != "a/alpha" || len(models.Models) != 2 || models.Models[1].ID != "b/beta" || !models.Models[1].Available {
		t.Fatalf("models: %+v", models)
	}

	getenv := func(k string) string {
		if k == "AGENTIK_URL" {
			return "http://" + addr
		}
		return ""
	}
	var out, errs syncBuffer
	if err := runChat(context.Background(), []string{"--model", "b/beta"}, getenv, strings.NewReader("hello beta\n"), &out, &errs, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "You said: hello beta") {
		t.Fatalf("chat output:\n%s", out.String())
	}
	if reqs := fakeB.Requests(); len(reqs) != 1 || reqs[0].Model != "beta" {
		t.Errorf("b received %+v", reqs)
	}
	if n := len(fakeA.Requests()); n != 0 {
		t.Errorf("a received %d requests", n)
	}

	// An unknown model: the error names the models there are.
	err := runChat(context.Background(), []string{"--model", "c/gamma"}, getenv, strings.NewReader(""), io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "a/alpha, b/beta") {
		t.Errorf("unknown model: %v", err)
	}
}

// TestProvidersFileErrorStopsStart: a bad providers file stops the start
// with an error naming the provider and the field.
func TestProvidersFileErrorStopsStart(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "providers.json")
	if err := os.WriteFile(file, []byte(`{"providers":{"cloud":{"base_url":"https://x.example/v1","api_key":"${MISSING_KEY}","models":["m"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--addr", freeAddr(t), "--db", "sqlite:"+t.TempDir()+"/a.db", "--providers", file)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("agentik started with a bad providers file")
	}
	for _, want := range []string{`provider "cloud"`, "api_key", "MISSING_KEY is not set"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
}
