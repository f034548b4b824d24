package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/archive"
	"github.com/agentik/agentik/internal/protocol"
)

// runExport writes an export to stdout (or --out): the whole database as
// agentik JSON, or with an ID that conversation (--format json|markdown).
func runExport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik export", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	var cf clientFlags
	cf.register(fs, getenv, stderr)
	format := fs.String("format", "json", "json or markdown (markdown needs an ID)")
	out := fs.String("out", "", "write to this file instead of stdout")
	files := fs.Bool("files", false, "carry each attached file's bytes (json only), so the export restores on another server or by another user")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: agentik export [--server URL] [--format json|markdown] [--files] [--out FILE] [ID]\n\nWithout ID: every stored conversation as one agentik JSON document (a backup that agentik import reads back).\nAn attached file is written as a reference to the file on this server unless --files is given.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("export: unexpected argument %q", fs.Arg(1))
	}
	q := url.Values{}
	if *files {
		if *format != "json" {
			return errors.New("export: --files is for --format json (Markdown names a file, it does not carry it)")
		}
		q.Set("files", "embed")
	}
	path := "/agentik/export"
	if id := fs.Arg(0); id != "" {
		q.Set("format", *format)
		path = "/agentik/conversations/" + url.PathEscape(id) + "/export"
	} else if *format != "json" {
		return errors.New("export: the whole database is exported as json only; give an ID for markdown")
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer f.Close()
		w = f
	}
	resp, err := archiveRequest(ctx, cf, getenv, http.MethodGet, path, nil)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if f, ok := w.(*os.File); ok && w != stdout {
		return f.Close()
	}
	return nil
}

// maxUnzipped caps the conversations.json that agentik import reads out
// of a ChatGPT export ZIP (a zip bomb stops there).
const maxUnzipped = 2 << 30

// runImport sends FILE (agentik JSON, a ChatGPT conversations.json or the
// ChatGPT export ZIP that holds it) to
// POST /agentik/import and says what it did ("2 imported, 0 skipped", one
// line per conversation imported), or prints the server's answer as JSON
// with --json.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik import", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	var cf clientFlags
	cf.register(fs, getenv, stderr)
	asJSON := fs.Bool("json", false, "print the server's answer (ImportResult JSON) instead of a summary")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: agentik import [--server URL] [--json] FILE\n\nFILE is an agentik export, a ChatGPT data export ZIP or the conversations.json inside it;\n- reads stdin.\nA big file is sent in parts within the server's limits, each all or nothing; running the\nimport again after a failure skips what is imported and finishes it.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("import: give one FILE")
	}
	var data []byte
	var err error
	if name := fs.Arg(0); name == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if archive.IsZIP(data) {
		if data, err = archive.UnzipConversations(data, maxUnzipped, ": unzip it yourself and import that file"); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	parts, err := importParts(data)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	// Each part is one import (all or nothing); the server's answers are
	// merged into one. A failed part leaves the earlier ones imported:
	// importing the file again skips those (same sources) and goes on.
	merged := agent.ImportResult{Conversations: []agent.Conversation{}, Existing: []string{}}
	for i, part := range parts {
		resp, err := archiveRequest(ctx, cf, getenv, http.MethodPost, "/agentik/import", bytes.NewReader(part))
		if err != nil {
			if len(parts) > 1 {
				return fmt.Errorf("import: part %d of %d (the parts before it are imported; run the import again to finish): %w", i+1, len(parts), err)
			}
			return fmt.Errorf("import: %w", err)
		}
		var res agent.ImportResult
		err = json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("import: the server's answer: %w", err)
		}
		merged.Conversations = append(merged.Conversations, res.Conversations...)
		merged.Existing = append(merged.Existing, res.Existing...)
		merged.Memory += res.Memory
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(merged)
	}
	for _, c := range merged.Conversations {
		fmt.Fprintf(stdout, "imported %s  %s\n", c.ID, oneLine(c.Title, 80))
	}
	fmt.Fprintf(stdout, "%d imported, %d skipped (imported before)\n", len(merged.Conversations), len(merged.Existing))
	if merged.Memory > 0 {
		fmt.Fprintf(stdout, "%d memory blocks set\n", merged.Memory)
	}
	return nil
}

// importParts splits an import file into request bodies within the
// server's limits (agent.MaxImportConversations, agent.MaxImportMessages,
// and protocol.MaxBodyBytes). agentik JSON is split by its conversations'
// messages, a ChatGPT conversations.json by its conversations' nodes (an
// upper bound of their messages). A file within the limits is one part.
func importParts(data []byte) ([][]byte, error) {
	data = bytes.TrimSpace(data)
	var items []json.RawMessage
	var wrap func([]json.RawMessage) ([]byte, error)
	var size func(json.RawMessage) int
	switch {
	case len(data) > 0 && data[0] == '[': // ChatGPT
		if err := json.Unmarshal(data, &items); err != nil {
			return [][]byte{data}, nil // the server says what is wrong
		}
		wrap = func(part []json.RawMessage) ([]byte, error) { return json.Marshal(part) }
		size = func(c json.RawMessage) int {
			var v struct {
				Mapping map[string]json.RawMessage `json:"mapping"`
			}
			_ = json.Unmarshal(c, &v)
			return len(v.Mapping)
		}
	default:
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(data, &doc); err != nil || doc["conversations"] == nil {
			return [][]byte{data}, nil
		}
		if err := json.Unmarshal(doc["conversations"], &items); err != nil {
			return [][]byte{data}, nil
		}
		wrap = func(part []json.RawMessage) ([]byte, error) {
			b, err := json.Marshal(part)
			if err != nil {
				return nil, err
			}
			doc["conversations"] = b
			return json.Marshal(doc)
		}
		size = func(c json.RawMessage) int {
			var v struct {
				Messages []json.RawMessage `json:"messages"`
			}
			_ = json.Unmarshal(c, &v)
			return len(v.Messages)
		}
	}
	const maxBytes = protocol.MaxBodyBytes * 3 / 4 // room for the wrapping
	var parts [][]byte
	var cur []json.RawMessage
	msgs, bytesIn := 0, 0
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		b, err := wrap(cur)
		if err != nil {
			return err
		}
		parts = append(parts, b)
		cur, msgs, bytesIn = nil, 0, 0
		return nil
	}
	for _, c := range items {
		n := size(c)
		if len(cur) > 0 && (len(cur)+1 > agent.MaxImportConversations || msgs+n > agent.MaxImportMessages || bytesIn+len(c) > maxBytes) {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		cur = append(cur, c)
		msgs += n
		bytesIn += len(c)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return [][]byte{data}, nil
	}
	return parts, nil
}

// archiveRequest does one request to the server with the API key, and
// turns an error status into an error carrying the server's message.
func archiveRequest(ctx context.Context, cf clientFlags, getenv func(string) string, method, path string, body io.Reader) (*http.Response, error) {
	base := strings.TrimSuffix(cf.server, "/")
	if strings.HasPrefix(base, "ws") { // ws:// and wss:// name the same server
		base = "http" + strings.TrimPrefix(base, "ws")
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key := cf.config(getenv).APIKey; key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := cf.doWaitingForStart(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		// A typed error ({"code","message"}) is said as its message.
		var e agent.Error
		if json.Unmarshal(msg, &e) == nil && e.Message != "" {
			return nil, fmt.Errorf("the server answered %s: %s", resp.Status, e.Message)
		}
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}

// serverStartWait is how long a REST command waits for a server on this
// machine that refuses connections: one started a moment ago (`agentik &`
// and the next line, as the README's team section is pasted) listens
// once its database is open.
const serverStartWait = 10 * time.Second

// doWaitingForStart does req, again every 100ms while a loopback server
// refuses the connection, for serverStartWait at most; it says once on
// stderr that it waits. A refused connection past that says which server
// it tried and how to name another.
func (cf clientFlags) doWaitingForStart(ctx context.Context, req *http.Request) (*http.Response, error) {
	deadline := time.Now().Add(serverStartWait)
	said := false
	for {
		resp, err := http.DefaultClient.Do(req)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
			return resp, err
		}
		retry := req.Body == nil || req.GetBody != nil
		if !retry || !isLoopback(req.URL.Hostname()) || time.Now().After(deadline) {
			return nil, fmt.Errorf("cannot reach the agentik server at %s (start it with `agentik`, or set AGENTIK_URL to where it listens): %w", cf.server, err)
		}
		if !said && cf.stderr != nil {
			fmt.Fprintf(cf.stderr, "agentik: waiting for the server at %s to start…\n", cf.server)
			said = true
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		next := req.Clone(ctx)
		if req.GetBody != nil {
			if next.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		req = next
	}
}
