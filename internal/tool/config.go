package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agentik/agentik/internal/envvar"
)

// Transports of a ServerConfig.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http" // streamable HTTP
	TransportSSE   = "sse"  // the older HTTP+SSE transport
	// TransportAuto is a remote entry without a type: streamable HTTP first,
	// then SSE.
	TransportAuto = "auto"
)

// Config is a parsed mcp.json: the MCP servers the operator configured.
type Config struct {
	// Servers in name order.
	Servers []ServerConfig
}

// ServerConfig is one entry of mcp.json with its variables expanded.
type ServerConfig struct {
	Name      string
	Transport string // TransportStdio, TransportHTTP, TransportSSE or TransportAuto
	Disabled  bool

	// stdio
	Command string
	Args    []string
	Env     map[string]string // added to the clean environment; may hold secrets
	Cwd     string

	// http, sse
	URL     string
	Headers map[string]string // may hold secrets

	// Approval says which calls wait for a person's decision
	// (requireApproval, else AGENTIK_TOOL_APPROVAL).
	Approval Approval
	// AllowedTools (nil: all) and ExcludedTools filter which of the
	// server's tools the model is offered.
	AllowedTools, ExcludedTools []string
	// OAuth is the entry's "oauth" object (oauth.go); nil: none.
	OAuth *OAuthConfig
	// PerUser is "auth": "per_user" (peruser.go): every call runs with
	// its caller's own credential. With UserSecret, a header holds
	// ${user.secret} (each user's secret, given through
	// PUT /agentik/credentials/{server}); without, each user signs in
	// with OAuth.
	PerUser, UserSecret bool

	// secrets are the values that must never be logged or shown: env and
	// header values, and whatever a ${VAR} expanded to.
	secrets []string
}

// LogValue implements slog.LogValuer: never the values of env or headers.
func (s ServerConfig) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("name", s.Name), slog.String("transport", s.Transport)}
	if s.Command != "" {
		attrs = append(attrs, slog.String("command", s.redact(s.Command)))
	}
	if s.URL != "" {
		attrs = append(attrs, slog.String("url", s.redact(redactURL(s.URL))))
	}
	return slog.GroupValue(attrs...)
}

// redact replaces every secret of the entry found in text.
func (s ServerConfig) redact(text string) string {
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, "[redacted]")
	}
	return text
}

// minSecretLen is the shortest value redact replaces: shorter ones ("1",
// "on") would mangle messages and are no secrets.
const minSecretLen = 4

// redactURL drops the user info and the query of a URL, where tokens live.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "[invalid url]"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "[redacted]"
	}
	return u.String()
}

// ConfigError is a malformed mcp.json: it names the server and the field.
type ConfigError struct {
	Server string // "" for the file as a whole
	Field  string // "" for the entry as a whole
	Msg    string
}

// Error says what is wrong, naming the server and the field.
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("mcp config")
	if e.Server != "" {
		fmt.Fprintf(&b, ": server %q", e.Server)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// LoadConfig reads and parses the mcp.json at path. A relative cwd of an
// entry is taken relative to the file's directory.
func LoadConfig(path string, getenv func(string) string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("mcp config: %w", err)
	}
	cfg, err := ParseConfig(data, getenv)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	for i := range cfg.Servers {
		if c := cfg.Servers[i].Cwd; c != "" && !filepath.IsAbs(c) {
			cfg.Servers[i].Cwd = filepath.Join(dir, c)
		}
	}
	return cfg, nil
}

// fileJSON is the top level of mcp.json: Claude Desktop's mcpServers and VS
// Code's servers; other keys (inputs, …) are ignored.
type fileJSON struct {
	MCPServers map[string]json.RawMessage `json:"mcpServers"`
	Servers    map[string]json.RawMessage `json:"servers"`
}

// ParseConfig parses the text of an mcp.json. getenv resolves ${VAR} and
// ${VAR:-default}; an unset or empty VAR without a default is an error.
// Errors are *ConfigError.
func ParseConfig(data []byte, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Config{}, &ConfigError{Msg: jsonErrorMsg(data, err)}
	}
	if top == nil {
		return Config{}, &ConfigError{Msg: "the file must be a JSON object"}
	}
	entries := map[string]json.RawMessage{}
	found := false
	for _, key := range []string{"mcpServers", "servers"} {
		raw, ok := top[key]
		if !ok {
			continue
		}
		found = true
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return Config{}, &ConfigError{Field: key, Msg: "must be an object of servers by name"}
		}
		for name, e := range m {
			if _, dup := entries[name]; dup {
				return Config{}, &ConfigError{Server: name, Msg: "defined in both mcpServers and servers"}
			}
			entries[name] = e
		}
	}
	if !found {
		return Config{}, &ConfigError{Msg: `no "mcpServers" (or "servers") object`}
	}
	def, err := DefaultApproval(getenv)
	if err != nil {
		return Config{}, err
	}
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	sort.Strings(names)
	cfg := Config{Servers: make([]ServerConfig, 0, len(names))}
	for _, name := range names {
		sc, err := parseServer(name, entries[name], getenv, def)
		if err != nil {
			return Config{}, err
		}
		cfg.Servers = append(cfg.Servers, sc)
	}
	return cfg, nil
}

// ParseEntry parses one server's entry of an mcp.json (the object under
// its name), as ParseConfig does: the admin panel's servers. Errors are
// *ConfigError.
func ParseEntry(name string, data []byte, getenv func(string) string) (ServerConfig, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if strings.TrimSpace(name) == "" {
		return ServerConfig{}, &ConfigError{Field: "name", Msg: "is required"}
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil || probe == nil {
		msg := "must be a JSON object such as {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-everything\"]} or {\"url\": \"https://…/mcp\"}"
		if err != nil {
			msg = jsonErrorMsg(data, err) + ": " + msg
		}
		return ServerConfig{}, &ConfigError{Server: name, Msg: msg}
	}
	def, err := DefaultApproval(getenv)
	if err != nil {
		return ServerConfig{}, err
	}
	return parseServer(name, data, getenv, def)
}

// jsonErrorMsg says where in data a JSON error is.
func jsonErrorMsg(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		return "the file must be a JSON object"
	default:
		return "invalid JSON: " + err.Error()
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(data[:off], '\n') - 1
	return fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, se.Error())
}

// entryJSON is one server entry; fields stay raw so that a wrong type names
// its field. Unknown fields (autoApprove, timeout, …) are ignored.
type entryJSON struct {
	Type     json.RawMessage `json:"type"`
	Command  json.RawMessage `json:"command"`
	Args     json.RawMessage `json:"args"`
	Env      json.RawMessage `json:"env"`
	Cwd      json.RawMessage `json:"cwd"`
	URL      json.RawMessage `json:"url"`
	Headers  json.RawMessage `json:"headers"`
	Disabled json.RawMessage `json:"disabled"`

	// agentik's own keys (DESIGN.md §10.2), see approval.go.
	RequireApproval json.RawMessage `json:"requireApproval"`
	AllowedTools    json.RawMessage `json:"allowedTools"`
	ExcludedTools   json.RawMessage `json:"excludedTools"`
	OAuth           json.RawMessage `json:"oauth"`
	Auth            json.RawMessage `json:"auth"`
}

func parseServer(name string, raw json.RawMessage, getenv func(string) string, def Approval) (ServerConfig, error) {
	fail := func(field, format string, args ...any) (ServerConfig, error) {
		return ServerConfig{}, &ConfigError{Server: name, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(name) == "" {
		return fail("", "the server name is empty")
	}
	var e entryJSON
	if err := json.Unmarshal(raw, &e); err != nil || isNull(raw) {
		return fail("", "the entry must be an object")
	}
	sc := ServerConfig{Name: name}
	var typ string
	if err := decodeOpt(e.Type, &typ); err != nil {
		return fail("type", "must be a string")
	}
	if err := decodeOpt(e.Disabled, &sc.Disabled); err != nil {
		return fail("disabled", "must be true or false")
	}
	if err := decodeOpt(e.Command, &sc.Command); err != nil {
		return fail("command", "must be a string")
	}
	if err := decodeOpt(e.Args, &sc.Args); err != nil {
		return fail("args", "must be an array of strings")
	}
	if err := decodeOpt(e.Env, &sc.Env); err != nil {
		return fail("env", "must be an object of strings")
	}
	if err := decodeOpt(e.Cwd, &sc.Cwd); err != nil {
		return fail("cwd", "must be a string")
	}
	if err := decodeOpt(e.URL, &sc.URL); err != nil {
		return fail("url", "must be a string")
	}
	if err := decodeOpt(e.Headers, &sc.Headers); err != nil {
		return fail("headers", "must be an object of strings")
	}
	if err := parsePolicy(&sc, e, def); err != nil {
		return ServerConfig{}, err
	}
	var auth string
	if err := decodeOpt(e.Auth, &auth); err != nil {
		return fail("auth", "must be a string")
	}
	switch auth {
	case "", AuthShared:
	case AuthPerUser:
		sc.PerUser = true
	default:
		return fail("auth", "unknown value %q: use %q or %q", auth, AuthShared, AuthPerUser)
	}

	switch strings.ToLower(typ) {
	case "":
		switch {
		case sc.Command != "" && sc.URL != "":
			return fail("", `has both "command" and "url": set one`)
		case sc.Command != "":
			sc.Transport = TransportStdio
		case sc.URL != "":
			sc.Transport = TransportAuto
		default:
			return fail("", `needs "command" (stdio) or "url" (http, sse)`)
		}
	case "stdio":
		sc.Transport = TransportStdio
	case "http", "streamable-http", "streamable_http", "streamablehttp":
		sc.Transport = TransportHTTP
	case "sse":
		sc.Transport = TransportSSE
	default:
		return fail("type", "unknown transport %q: use stdio, http or sse", typ)
	}
	if sc.PerUser && sc.Transport == TransportStdio {
		return fail("auth", "%q needs a remote server (url): a stdio server runs once for everyone", AuthPerUser)
	}
	if sc.Transport == TransportStdio {
		if sc.Command == "" {
			return fail("command", "is required for a stdio server")
		}
		if sc.URL != "" {
			return fail("url", "is not used by a stdio server: remove it or set type http or sse")
		}
		if len(sc.Headers) > 0 {
			return fail("headers", "are not used by a stdio server")
		}
	} else {
		if sc.URL == "" {
			return fail("url", "is required for a %s server", typ)
		}
		if sc.Command != "" {
			return fail("command", "is not used by a remote server: remove it or set type stdio")
		}
	}
	if sc.Disabled {
		// Not started, so its variables need not resolve.
		return sc, nil
	}

	x := expander{getenv: getenv}
	var err error
	if sc.Command, err = x.expand(sc.Command); err != nil {
		return fail("command", "%v", err)
	}
	for i := range sc.Args {
		if sc.Args[i], err = x.expand(sc.Args[i]); err != nil {
			return fail(fmt.Sprintf("args[%d]", i), "%v", err)
		}
	}
	if sc.Cwd, err = x.expand(sc.Cwd); err != nil {
		return fail("cwd", "%v", err)
	}
	for _, k := range sortedKeys(sc.Env) {
		v, err := x.expand(sc.Env[k])
		if err != nil {
			return fail("env."+k, "%v", err)
		}
		sc.Env[k] = v
		x.secret(v)
	}
	if sc.URL, err = x.expand(sc.URL); err != nil {
		return fail("url", "%v", err)
	}
	for _, k := range sortedKeys(sc.Headers) {
		v, err := x.expandHeader(sc.Headers[k])
		if err != nil {
			return fail("headers."+k, "%v", err)
		}
		if strings.Contains(v, userSecretMark) {
			if !sc.PerUser {
				return fail("headers."+k, "%s is each user's own secret: it needs \"auth\": %q", userSecretVar, AuthPerUser)
			}
			sc.UserSecret = true
			sc.Headers[k] = v
			continue // the shape, not a secret; each user's is redacted on their session
		}
		sc.Headers[k] = v
		x.secret(v)
		// "Bearer <token>": the token alone may show up elsewhere.
		if _, tok, ok := strings.Cut(v, " "); ok {
			x.secret(tok)
		}
	}
	if err := parseOAuth(&sc, e.OAuth, &x); err != nil {
		return ServerConfig{}, err
	}
	if sc.Transport == TransportStdio && strings.TrimSpace(sc.Command) == "" {
		return fail("command", "is empty once its variables are expanded")
	}
	for k := range sc.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fail("env", "invalid variable name %q", k)
		}
	}
	if sc.Transport != TransportStdio {
		u, err := url.Parse(sc.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fail("url", "must be an absolute http:// or https:// URL")
		}
		// Credentials in the URL itself are secrets too.
		if pw, ok := u.User.Password(); ok {
			x.secret(pw)
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				x.secret(v)
			}
		}
	}
	sc.secrets = x.secrets
	return sc, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// decodeOpt decodes raw into v unless it is absent or null.
func decodeOpt(raw json.RawMessage, v any) error {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	return json.Unmarshal(raw, v)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// expander expands ${VAR}, ${VAR:-default} and VS Code's ${env:VAR}, and
// remembers what it expanded to, since such values are usually secrets.
type expander struct {
	getenv  func(string) string
	secrets []string
}

func (x *expander) secret(v string) {
	if len(v) >= minSecretLen && !slices.Contains(x.secrets, v) {
		x.secrets = append(x.secrets, v)
	}
}

func (x *expander) expand(s string) (string, error) {
	return envvar.Expander{Getenv: x.getenv, Seen: x.secret}.Expand(s)
}

// expandHeader expands a header's value, keeping each ${user.secret} as
// userSecretMark for the session of each user to fill in (peruser.go).
func (x *expander) expandHeader(s string) (string, error) {
	parts := strings.Split(s, userSecretVar)
	for i, p := range parts {
		v, err := x.expand(p)
		if err != nil {
			return "", err
		}
		parts[i] = v
	}
	return strings.Join(parts, userSecretMark), nil
}
