package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// runExport writes an export to stdout (or --out): the whole database as
// agentik JSON, or with an ID that conversation (--format json|markdown).
func runExport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik export", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	var cf clientFlags
	cf.register(fs, getenv)
	format := fs.String("format", "json", "json or markdown (markdown needs an ID)")
	out := fs.String("out", "", "write to this file instead of stdout")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: agentik export [--server URL] [--format json|markdown] [--out FILE] [ID]\n\nWithout ID: every stored conversation as one agentik JSON document (a backup that agentik import reads back).")
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
	path := "/agentik/export"
	if id := fs.Arg(0); id != "" {
		path = "/agentik/conversations/" + url.PathEscape(id) + "/export?format=" + url.QueryEscape(*format)
	} else if *format != "json" {
		return errors.New("export: the whole database is exported as json only; give an ID for markdown")
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

// runImport sends FILE (agentik JSON or a ChatGPT conversations.json) to
// POST /agentik/import and prints the server's answer.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentik import", flag.ContinueOnError)
	fs.SetOutput(helpOut(args, stdout, stderr))
	var cf clientFlags
	cf.register(fs, getenv)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: agentik import [--server URL] FILE\n\nFILE is an agentik export or the conversations.json of a ChatGPT data export; - reads stdin.")
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
	var body io.Reader = os.Stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		body = f
	}
	resp, err := archiveRequest(ctx, cf, getenv, http.MethodPost, "/agentik/import", body)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer resp.Body.Close()
	_, err = io.Copy(stdout, resp.Body)
	return err
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
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}
