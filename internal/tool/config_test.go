package tool

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func testEnv(k string) string {
	return map[string]string{
		"TOKEN": "secret-token",
		"HOST":  "example.test",
		"EMPTY": "",
		"ARG":   "--verbose",
	}[k]
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []ServerConfig
	}{
		{"claude desktop stdio", `{"mcpServers":{"fs":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","/tmp"],"env":{"A":"b"}}}}`,
			[]ServerConfig{{Name: "fs", Transport: TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}, Env: map[string]string{"A": "b"}}}},
		{"vs code servers", `{"servers":{"gh":{"type":"http","url":"https://${HOST}/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}}},"inputs":[]}`,
			[]ServerConfig{{Name: "gh", Transport: TransportHTTP, URL: "https://example.test/mcp", Headers: map[string]string{"Authorization": "Bearer secret-token"}}}},
		{"remote without type is auto", `{"mcpServers":{"r":{"url":"http://127.0.0.1:9/mcp"}}}`,
			[]ServerConfig{{Name: "r", Transport: TransportAuto, URL: "http://127.0.0.1:9/mcp"}}},
		{"sse", `{"mcpServers":{"r":{"type":"sse","url":"http://127.0.0.1:9/sse"}}}`,
			[]ServerConfig{{Name: "r", Transport: TransportSSE, URL: "http://127.0.0.1:9/sse"}}},
		{"streamable-http alias", `{"mcpServers":{"r":{"type":"streamable-http","url":"http://h/mcp"}}}`,
			[]ServerConfig{{Name: "r", Transport: TransportHTTP, URL: "http://h/mcp"}}},
		{"explicit stdio, cwd, defaults", `{"mcpServers":{"s":{"type":"stdio","command":"${CMD:-node}","args":["${ARG}","${MISSING:-x}","${EMPTY:-}","${env:TOKEN}","a${HOST}b"],"cwd":"/srv"}}}`,
			[]ServerConfig{{Name: "s", Transport: TransportStdio, Command: "node", Args: []string{"--verbose", "x", "", "secret-token", "aexample.testb"}, Cwd: "/srv"}}},
		{"disabled entries are not expanded", `{"mcpServers":{"off":{"command":"${NOT_SET}","disabled":true}}}`,
			[]ServerConfig{{Name: "off", Transport: TransportStdio, Command: "${NOT_SET}", Disabled: true}}},
		{"both sections merge, sorted by name", `{"mcpServers":{"b":{"command":"x"}},"servers":{"a":{"command":"y"}}}`,
			[]ServerConfig{{Name: "a", Transport: TransportStdio, Command: "y"}, {Name: "b", Transport: TransportStdio, Command: "x"}}},
		{"unknown fields ignored, nulls absent", `{"mcpServers":{"s":{"command":"x","autoApprove":["t"],"timeout":60,"args":null,"env":null}}}`,
			[]ServerConfig{{Name: "s", Transport: TransportStdio, Command: "x"}}},
		{"empty set", `{"mcpServers":{}}`, []ServerConfig{}},
		{"approval always, tool filters", `{"mcpServers":{"s":{"command":"x","requireApproval":"always","allowedTools":["a","b"],"excludedTools":["b"]}}}`,
			[]ServerConfig{{Name: "s", Transport: TransportStdio, Command: "x", Approval: Approval{Default: true}, AllowedTools: []string{"a", "b"}, ExcludedTools: []string{"b"}}}},
		{"approval never", `{"mcpServers":{"s":{"command":"x","requireApproval":"never"}}}`,
			[]ServerConfig{{Name: "s", Transport: TransportStdio, Command: "x"}}},
		{"approval for listed tools", `{"mcpServers":{"s":{"command":"x","requireApproval":{"always":["write_file"]}}}}`,
			[]ServerConfig{{Name: "s", Transport: TransportStdio, Command: "x", Approval: Approval{Except: []string{"write_file"}}}}},
		{"approval but listed tools", `{"mcpServers":{"s":{"command":"x","requireApproval":{"never":["read_file"]}}}}`,
			[]ServerConfig{{Name: "s", Transport: TransportStdio, Command: "x", Approval: Approval{Default: true, Except: []string{"read_file"}}}}},
		{"dollar without brace is literal", `{"mcpServers":{"s":{"command":"x","args":["$HOME","a$","$$"]}}}`,
			[]ServerConfig{{Name: "s", Transport: TransportStdio, Command: "x", Args: []string{"$HOME", "a$", "$$"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tt.in), testEnv)
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if diff := cmp.Diff(got.Servers, tt.want, cmpopts.IgnoreUnexported(ServerConfig{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("servers (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		server string
		field  string
		msg    string
	}{
		{"not json", `{"mcpServers":`, "", "", "invalid JSON at line 1, column 14"},
		{"syntax error line", "{\n\"mcpServers\": {,}\n}", "", "", "invalid JSON at line 2, column 16"},
		{"empty file", ``, "", "", "invalid JSON"},
		{"array", `[]`, "", "", "must be a JSON object"},
		{"null", `null`, "", "", "must be a JSON object"},
		{"no servers", `{}`, "", "", `no "mcpServers"`},
		{"servers not object", `{"mcpServers":[]}`, "", "mcpServers", "must be an object"},
		{"servers null", `{"servers":null}`, "", "servers", "must be an object"},
		{"duplicate across sections", `{"mcpServers":{"a":{"command":"x"}},"servers":{"a":{"command":"y"}}}`, "a", "", "both"},
		{"empty name", `{"mcpServers":{"":{"command":"x"}}}`, "", "", "name is empty"},
		{"entry not object", `{"mcpServers":{"a":"npx"}}`, "a", "", "must be an object"},
		{"entry null", `{"mcpServers":{"a":null}}`, "a", "", "must be an object"},
		{"nothing to run", `{"mcpServers":{"a":{}}}`, "a", "", `needs "command"`},
		{"command and url", `{"mcpServers":{"a":{"command":"x","url":"http://h"}}}`, "a", "", "both"},
		{"unknown transport", `{"mcpServers":{"a":{"type":"websocket","url":"ws://h"}}}`, "a", "type", `unknown transport "websocket"`},
		{"type not string", `{"mcpServers":{"a":{"type":1,"command":"x"}}}`, "a", "type", "must be a string"},
		{"command not string", `{"mcpServers":{"a":{"command":["x"]}}}`, "a", "command", "must be a string"},
		{"args not array", `{"mcpServers":{"a":{"command":"x","args":"-y"}}}`, "a", "args", "array of strings"},
		{"args not strings", `{"mcpServers":{"a":{"command":"x","args":[1]}}}`, "a", "args", "array of strings"},
		{"env not object", `{"mcpServers":{"a":{"command":"x","env":["A=b"]}}}`, "a", "env", "object of strings"},
		{"env number", `{"mcpServers":{"a":{"command":"x","env":{"PORT":8080}}}}`, "a", "env", "object of strings"},
		{"env bad name", `{"mcpServers":{"a":{"command":"x","env":{"A=B":"c"}}}}`, "a", "env", "invalid variable name"},
		{"cwd not string", `{"mcpServers":{"a":{"command":"x","cwd":false}}}`, "a", "cwd", "must be a string"},
		{"url not string", `{"mcpServers":{"a":{"url":{}}}}`, "a", "url", "must be a string"},
		{"headers not strings", `{"mcpServers":{"a":{"url":"http://h","headers":{"X":1}}}}`, "a", "headers", "object of strings"},
		{"disabled not bool", `{"mcpServers":{"a":{"command":"x","disabled":"yes"}}}`, "a", "disabled", "true or false"},
		{"stdio without command", `{"mcpServers":{"a":{"type":"stdio","args":["x"]}}}`, "a", "command", "required"},
		{"stdio with url", `{"mcpServers":{"a":{"type":"stdio","command":"x","url":"http://h"}}}`, "a", "url", "not used"},
		{"stdio with headers", `{"mcpServers":{"a":{"command":"x","headers":{"A":"b"}}}}`, "a", "headers", "not used"},
		{"http without url", `{"mcpServers":{"a":{"type":"http"}}}`, "a", "url", "required"},
		{"sse with command", `{"mcpServers":{"a":{"type":"sse","url":"http://h","command":"x"}}}`, "a", "command", "not used"},
		{"url relative", `{"mcpServers":{"a":{"url":"/mcp"}}}`, "a", "url", "absolute http"},
		{"url scheme", `{"mcpServers":{"a":{"url":"ftp://h/mcp"}}}`, "a", "url", "absolute http"},
		{"url unparsable", `{"mcpServers":{"a":{"url":"http://[::1"}}}`, "a", "url", "absolute http"},
		{"unresolved in command", `{"mcpServers":{"a":{"command":"${NOPE}"}}}`, "a", "command", "variable NOPE is not set"},
		{"empty var is unresolved", `{"mcpServers":{"a":{"command":"x","args":["${EMPTY}"]}}}`, "a", "args[0]", "variable EMPTY is not set"},
		{"unresolved in arg", `{"mcpServers":{"a":{"command":"x","args":["ok","${NOPE}"]}}}`, "a", "args[1]", "NOPE"},
		{"unresolved in env", `{"mcpServers":{"a":{"command":"x","env":{"KEY":"${NOPE}"}}}}`, "a", "env.KEY", "NOPE"},
		{"unresolved in cwd", `{"mcpServers":{"a":{"command":"x","cwd":"${NOPE}"}}}`, "a", "cwd", "NOPE"},
		{"unresolved in url", `{"mcpServers":{"a":{"url":"http://${NOPE}/"}}}`, "a", "url", "NOPE"},
		{"unresolved in header", `{"mcpServers":{"a":{"url":"http://h","headers":{"Authorization":"Bearer ${NOPE}"}}}}`, "a", "headers.Authorization", "NOPE"},
		{"command empty after expansion", `{"mcpServers":{"a":{"command":"${NOPE:-}"}}}`, "a", "command", "empty"},
		{"unterminated", `{"mcpServers":{"a":{"command":"${TOKEN"}}}`, "a", "command", "unterminated"},
		{"bad var name", `{"mcpServers":{"a":{"command":"${1X}"}}}`, "a", "command", "invalid variable"},
		{"empty var name", `{"mcpServers":{"a":{"command":"${}"}}}`, "a", "command", "invalid variable"},
		{"requireApproval unknown word", `{"mcpServers":{"a":{"command":"x","requireApproval":"sometimes"}}}`, "a", "requireApproval", `got "sometimes"`},
		{"requireApproval number", `{"mcpServers":{"a":{"command":"x","requireApproval":1}}}`, "a", "requireApproval", `must be "always"`},
		{"requireApproval two keys", `{"mcpServers":{"a":{"command":"x","requireApproval":{"always":["a"],"never":["b"]}}}}`, "a", "requireApproval", "exactly one key"},
		{"requireApproval unknown key", `{"mcpServers":{"a":{"command":"x","requireApproval":{"ask":["a"]}}}}`, "a", "requireApproval", `unknown key "ask"`},
		{"requireApproval list not strings", `{"mcpServers":{"a":{"command":"x","requireApproval":{"always":[1]}}}}`, "a", "requireApproval.always", "array of tool names"},
		{"requireApproval empty name", `{"mcpServers":{"a":{"command":"x","requireApproval":{"never":[""]}}}}`, "a", "requireApproval.never", "empty tool name"},
		{"allowedTools not array", `{"mcpServers":{"a":{"command":"x","allowedTools":"echo"}}}`, "a", "allowedTools", "array of tool names"},
		{"excludedTools not strings", `{"mcpServers":{"a":{"command":"x","excludedTools":[true]}}}`, "a", "excludedTools", "array of tool names"},
		{"vs code input", `{"servers":{"a":{"command":"x","env":{"K":"${input:key}"}}}}`, "a", "env.K", "invalid variable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.in), testEnv)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T), want *ConfigError", err, err)
			}
			if ce.Server != tt.server || ce.Field != tt.field || !strings.Contains(ce.Msg, tt.msg) {
				t.Errorf("error = {server %q, field %q, msg %q}, want {%q, %q, …%q…}", ce.Server, ce.Field, ce.Msg, tt.server, tt.field, tt.msg)
			}
			if tt.server != "" && !strings.Contains(err.Error(), `server "`+tt.server+`"`) {
				t.Errorf("%q does not name the server", err)
			}
			if tt.field != "" && !strings.Contains(err.Error(), tt.field) {
				t.Errorf("%q does not name the field", err)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers":{"s":{"command":"x","cwd":"sub"},"abs":{"command":"x","cwd":"/srv"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[1].Cwd; got != filepath.Join(dir, "sub") {
		t.Errorf("relative cwd = %s, want it under the file's directory", got)
	}
	if got := cfg.Servers[0].Cwd; got != "/srv" {
		t.Errorf("absolute cwd = %s", got)
	}
	_, err = LoadConfig(filepath.Join(dir, "missing.json"), testEnv)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	os.WriteFile(path, []byte(`{"mcpServers":{"s":{"command":"${NOPE}"}}}`), 0o600)
	_, err = LoadConfig(path, testEnv)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v: want a *ConfigError naming the file", err)
	}
}

func TestConfigLogValueHidesSecrets(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"r":{"url":"https://user:pw@h/mcp?key=${TOKEN}","headers":{"Authorization":"Bearer ${TOKEN}"}},"s":{"command":"x","env":{"K":"${TOKEN}"}}}}`), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, nil))
	for _, sc := range cfg.Servers {
		log.Info("server", "cfg", sc)
	}
	out := b.String()
	for _, secret := range []string{"secret-token", "pw"} {
		if strings.Contains(out, secret) {
			t.Errorf("log shows %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "cfg.name=r") || !strings.Contains(out, "https://h/mcp") {
		t.Errorf("log lacks the server:\n%s", out)
	}
	if got := cfg.Servers[0].redact("failed: secret-token rejected"); got != "failed: [redacted] rejected" {
		t.Errorf("redact = %q", got)
	}
	literal, err := ParseConfig([]byte(`{"mcpServers":{"r":{"url":"https://u:hunter22@h/mcp?api_key=abcdef123"}}}`), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := literal.Servers[0].redact(`Post "https://u:hunter22@h/mcp?api_key=abcdef123": refused`); strings.Contains(got, "hunter22") || strings.Contains(got, "abcdef123") {
		t.Errorf("redact = %q: credentials of the URL remain", got)
	}
}

// FuzzParseConfig: any input parses or fails with a *ConfigError; never a
// panic, and a parsed config holds only valid entries.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"fs":{"command":"npx","args":["-y","x"],"env":{"K":"${TOKEN}"}}}}`))
	f.Add([]byte(`{"servers":{"r":{"type":"http","url":"https://${HOST:-h}/mcp","headers":{"A":"b"}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data, testEnv)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *ConfigError", err, err)
			}
			return
		}
		for _, sc := range cfg.Servers {
			switch sc.Transport {
			case TransportStdio:
				if sc.Command == "" && !sc.Disabled {
					t.Errorf("stdio server %q without command", sc.Name)
				}
			case TransportHTTP, TransportSSE, TransportAuto:
				if sc.URL == "" {
					t.Errorf("remote server %q without url", sc.Name)
				}
			default:
				t.Errorf("server %q with transport %q", sc.Name, sc.Transport)
			}
		}
	})
}

func TestDefaultApproval(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want bool
		err  bool
	}{{"", false, false}, {"never", false, false}, {"always", true, false}, {"ask", false, true}} {
		getenv := func(k string) string { return map[string]string{"AGENTIK_TOOL_APPROVAL": tt.env}[k] }
		cfg, err := ParseConfig([]byte(`{"mcpServers":{"s":{"command":"x"},"t":{"command":"y","requireApproval":"never"}}}`), getenv)
		if tt.err {
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != "AGENTIK_TOOL_APPROVAL" {
				t.Errorf("AGENTIK_TOOL_APPROVAL=%q: error %v, want a ConfigError naming it", tt.env, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Servers[0].Approval.Needs("any"); got != tt.want {
			t.Errorf("AGENTIK_TOOL_APPROVAL=%q: a server without requireApproval needs approval = %v, want %v", tt.env, got, tt.want)
		}
		if cfg.Servers[1].Approval.Needs("any") {
			t.Errorf("AGENTIK_TOOL_APPROVAL=%q overrode requireApproval never", tt.env)
		}
	}
}

func TestApprovalNeeds(t *testing.T) {
	for _, tt := range []struct {
		a    Approval
		tool string
		want bool
	}{
		{Approval{}, "x", false},
		{Approval{Default: true}, "x", true},
		{Approval{Except: []string{"w"}}, "w", true},
		{Approval{Except: []string{"w"}}, "r", false},
		{Approval{Default: true, Except: []string{"r"}}, "r", false},
		{Approval{Default: true, Except: []string{"r"}}, "w", true},
	} {
		if got := tt.a.Needs(tt.tool); got != tt.want {
			t.Errorf("%+v.Needs(%q) = %v, want %v", tt.a, tt.tool, got, tt.want)
		}
	}
}
