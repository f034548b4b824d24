package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/a2a"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/secret"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/store"
	"github.com/agentik/agentik/internal/webhook"
)

// config is everything the server can be told, from the environment and
// flags (flags win): app.Run's settings.
type config = app.Settings

const usageText = `agentik — a runtime for LLM agents

Usage:
  agentik [flags]              run the server
  agentik tail [flags]         print events as JSON lines (agentik tail --help)
  agentik chat [ID]            chat in the terminal (agentik chat --help)
  agentik export [ID]          write a backup, or one conversation; --files carries attached files (agentik export --help)
  agentik import FILE          import an agentik export or a ChatGPT conversations.json
  agentik user COMMAND         people and their keys: add, list, key, disable… (agentik user --help)
  agentik schedule COMMAND     prompts run on a schedule: add, list, runs, delete (agentik schedule --help)
  agentik project COMMAND      projects and their members: list, add, show, member add… (agentik project --help)
  agentik inbox [COMMAND]      what waits for you: list, approve, deny (agentik inbox --help)
  agentik group COMMAND        groups and their members: list, add, rename, delete, member (agentik group --help)
  agentik audit verify FILE    check an export of the audit log offline (GET /agentik/audit/export)
  agentik version              the build: module version, commit, Go version

Settings (environment; a flag overrides its variable):
  --addr            AGENTIK_ADDR             listen address (default 127.0.0.1:8080;
                                             alias AGENTIK_PORT=N means 127.0.0.1:N)
  --db              AGENTIK_DB               sqlite:PATH or postgres://URL
                                             (default sqlite:./agentik.db; alias AGENTIK_DB_PATH=PATH)
  --store-mode      AGENTIK_STORE_MODE       fast (default: the store's speed layer on SQLite) or plain (one SQL
                                             transaction per commit, no side log nor own driver; docs/store.md)
  --system-prompt   AGENTIK_SYSTEM_PROMPT    system prompt of new conversations
  --mcp-config      AGENTIK_MCP_CONFIG       path to an mcp.json (Claude Desktop format)
                    AGENTIK_AGENTS           path to a JSON file of agents defined as code ({"agents":[…]})
  --event-ttl       AGENTIK_EVENT_TTL        how long events are kept (default 168h; messages are kept forever)
  --max-answer-bytes AGENTIK_MAX_ANSWER_BYTES cap on one model answer (default 1048576); past it the turn ends with an error
                    AGENTIK_MAX_IMPORT_BYTES cap on one import request (default 67108864); agentik import
                                             sends a file in parts, one conversation at least per part
                    AGENTIK_MAX_FILE_BYTES   cap on one uploaded file (default 33554432)
                    AGENTIK_MAX_USER_FILE_BYTES cap on one user's files together (default 1073741824)
                    AGENTIK_EMBEDDING_MODEL  embedding model of knowledge search, <provider>/<model> or a model
                                             of the default endpoint (default: none, keyword search only)
                    AGENTIK_API_KEYS         comma-separated API keys; when set, every route needs one
                    AGENTIK_TOOL_APPROVAL    always or never (default): whether tool calls of MCP servers
                                             without requireApproval wait for a person's decision
                    AGENTIK_APPROVAL_TIMEOUT deny a tool call that waits longer for approval, e.g. 10m (default: none;
                                             a temp conversation, such as a stateless /v1 request's, waits 10m at most)
                    AGENTIK_OIDC_ISSUER      sign in with an OpenID provider (with AGENTIK_OIDC_CLIENT_ID,
                                             AGENTIK_OIDC_CLIENT_SECRET; AGENTIK_OIDC_REDIRECT_URL, default
                                             http(s)://HOST/auth/oidc/callback; AGENTIK_OIDC_NAME for the button)
                    AGENTIK_OIDC_SIGNUP      open (anyone the provider signs in) or invite (users an admin added)
                    AGENTIK_SIGNUP           password accounts: closed (an admin's invite link only; the default),
                                             invite (members invite members too), approval (anyone signs up, an
                                             admin enables them), open (anyone signs up)
                    AGENTIK_PUBLIC_SHARES    on: a conversation's share link (/s/…) opens for anyone holding it, signed
                                             in or not (default off: sign-in required)
                    AGENTIK_SCIM_TOKEN       the bearer token of SCIM 2.0 provisioning at /scim/v2 (Okta, Entra ID);
                                             at least 32 characters (default: none, SCIM off)
                    AGENTIK_AUDIT_TTL        how long audit log entries are kept, e.g. 8760h (default: forever;
                                             apart from AGENTIK_EVENT_TTL)
                    AGENTIK_ADMINS           emails that sign in as admins (comma-separated)
                    AGENTIK_OIDC_ADMIN_GROUP a groups claim value that makes an admin
                    AGENTIK_OIDC_TRUST_UNVERIFIED_EMAIL on: trust an email without an email_verified claim
                    AGENTIK_TRUSTED_USER_HEADER a header naming the user, believed only from AGENTIK_TRUSTED_PROXIES
                    AGENTIK_DRAIN_TIMEOUT    on SIGTERM/SIGINT, how long running turns may finish before the rest
                                             are left to the next start (or another instance) to continue (default 30s)
                    AGENTIK_TURN_CONTINUATIONS how many times a turn whose process died is continued from its
                                             last stored step (default 3; 0: it ends interrupted_by_restart)
                    AGENTIK_RECOVER_INTERVAL how often an instance on PostgreSQL continues the turns of an
                                             instance that died (kill -9, a crash), ≥ 100ms (default 30s)
                    AGENTIK_DEFAULT_BUDGET   every user's token budget, e.g. 2M/month, 500k/day (default: none;
                                             an admin sets a user's own with PATCH /agentik/users/{id})
                    AGENTIK_MAX_SCHEDULES    how many schedules one user may have (default: 100)
                    AGENTIK_SCHEDULE_MIN_INTERVAL the shortest time a schedule's rule may leave between
                                             two runs, ≥ 1s (default 1m)
  --allowed-hosts   AGENTIK_ALLOWED_HOSTS    extra Host names to accept (comma-separated; loopback always)
  --allowed-origins AGENTIK_ALLOWED_ORIGINS  extra Origin hosts to accept (comma-separated, * wildcards)
                    AGENTIK_TRUSTED_PROXIES  reverse proxies (comma-separated IPs or CIDRs) whose
                                             X-Forwarded-For / X-Forwarded-Proto are believed
  --insecure                                 allow a non-loopback address without API keys
  --log-level       AGENTIK_LOG_LEVEL        debug, info, warn or error (default info)
  --log-json        AGENTIK_LOG_FORMAT=json  JSON logs
  --demo            AGENTIK_DEMO=1           a built-in scripted demo model and tool instead of a real model
                    AGENTIK_WEBHOOKS         comma-separated URLs that receive each ended turn (turn.ended)
                    AGENTIK_WEBHOOK_SECRET   whsec_<base64> signing secret (Standard Webhooks); required with webhooks
                    AGENTIK_PUSH_ALLOW       hosts, IPs and CIDRs that A2A push notifications may reach although
                                             internal (loopback, private, link-local… are refused otherwise)
                    AGENTIK_PUSH_TIMEOUT     how long one task's push deliveries may take, retries included (default 5m)
                    AGENTIK_SECRET_KEY       at least 16 characters: seals remote MCP servers' OAuth tokens in the
                                             database (without it they are kept in memory until agentik stops)
                    AGENTIK_MCP_OAUTH_REDIRECT_URL agentik's /agentik/oauth/callback as browsers reach it
                                             (default http://ADDR/agentik/oauth/callback)
                    AGENTIK_EXPERIMENTAL_RELAY HOST:PORT of an event relay between instances on one PostgreSQL
                                             (a benchmark's sketch, not for production; default off)
Clients (agentik chat, tail, export, import):
                    AGENTIK_URL              the server (default http://127.0.0.1:8080)
                    AGENTIK_API_KEY          one of the server's AGENTIK_API_KEYS, when it needs one
Operations:
  GET /metrics (Prometheus; behind the API keys), GET /health.
  Traces: set OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) to export OTLP/HTTP.
Model (any OpenAI-compatible endpoint):
                    OPENAI_BASE_URL          e.g. http://127.0.0.1:11434/v1 (Ollama), http://127.0.0.1:8080/v1 (llama.cpp)
                    OPENAI_API_KEY           key for the endpoint (OpenAI when no base URL is set)
                    OPENAI_MODEL             model name
                    AGENTIK_LLM_BACKEND      openai (default); google is not available in this build
                    AGENTIK_CONTEXT_WINDOW   the model's context window in tokens (default: what the
                                             endpoint reports, else 8192); longer histories get summarized
                    AGENTIK_SUMMARY_MODEL    model that writes those summaries (default: the chat model)
                    AGENTIK_MODEL_CONTINUE   how a cut-off answer is continued after a restart: instruction (default,
                                             any endpoint) or prefix (continue_final_message: vLLM, SGLang, llama.cpp);
                                             a providers file sets it per provider ("continue")
  With none of them set, agentik uses Ollama if it answers on 127.0.0.1:11434;
  otherwise it starts without a model and sends fail with "unavailable".
  --providers       AGENTIK_PROVIDERS        a providers file (JSON): several endpoints and their models,
                                             each conversation picks one; replaces the OPENAI_* variables
  --titles          AGENTIK_TITLES           model (default with a model: it names a conversation after
                                             its first answer) or first_line (the first line of the first message)
                    AGENTIK_MEMORY           on (default: each user's memory blocks in the prompt, the memory
                                             tools offered) or off
`

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseConfig reads the environment, then the flags.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	c := config{Addr: "127.0.0.1:8080", DB: "sqlite:./agentik.db", EventTTL: app.DefaultEventTTL, DrainTimeout: app.DefaultDrainTimeout}
	if p := getenv("AGENTIK_PORT"); p != "" {
		c.Addr = "127.0.0.1:" + p
	}
	if v := getenv("AGENTIK_ADDR"); v != "" {
		c.Addr = v
	}
	if p := getenv("AGENTIK_DB_PATH"); p != "" {
		c.DB = "sqlite:" + p
	}
	if v := getenv("AGENTIK_DB"); v != "" {
		c.DB = v
	}
	storeMode := getenv("AGENTIK_STORE_MODE")
	c.SystemPrompt = getenv("AGENTIK_SYSTEM_PROMPT")
	c.MCPConfig = getenv("AGENTIK_MCP_CONFIG")
	c.Agents = getenv("AGENTIK_AGENTS")
	c.APIKeys = splitList(getenv("AGENTIK_API_KEYS"))
	if v := getenv("AGENTIK_API_KEYS"); v != "" && len(c.APIKeys) == 0 {
		// Set but holding no key (",", " "): starting would leave every
		// route open while the operator meant to close them.
		return c, fmt.Errorf("AGENTIK_API_KEYS is set but holds no key (got %q); give comma-separated keys, or unset it to run without authentication", v)
	}
	if v := getenv("AGENTIK_EVENT_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("AGENTIK_EVENT_TTL must be a positive duration like 168h, got %q", v)
		}
		c.EventTTL = d
	}
	if v := getenv("AGENTIK_MAX_ANSWER_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return c, fmt.Errorf("AGENTIK_MAX_ANSWER_BYTES must be a positive number of bytes like 1048576, got %q", v)
		}
		c.MaxAnswerBytes = n
	}
	if v := getenv("AGENTIK_MAX_IMPORT_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < protocol.MaxBodyBytes {
			return c, fmt.Errorf("AGENTIK_MAX_IMPORT_BYTES must be a number of bytes of at least %d (the cap of every request), like 67108864, got %q", protocol.MaxBodyBytes, v)
		}
		c.MaxImportBytes = n
	}
	for _, b := range []struct {
		name string
		into *int64
	}{{"AGENTIK_MAX_FILE_BYTES", &c.MaxFileBytes}, {"AGENTIK_MAX_USER_FILE_BYTES", &c.MaxUserFileBytes}} {
		if v := getenv(b.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return c, fmt.Errorf("%s must be a positive number of bytes like 33554432, got %q", b.name, v)
			}
			*b.into = n
		}
	}
	c.EmbeddingModel = getenv("AGENTIK_EMBEDDING_MODEL")
	if v := getenv("AGENTIK_CONTEXT_WINDOW"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 512 {
			return c, fmt.Errorf("AGENTIK_CONTEXT_WINDOW must be the model's context window in tokens (512 or more), like 8192, got %q", v)
		}
		c.ContextWindow = n
	}
	c.SummaryModel = strings.TrimSpace(getenv("AGENTIK_SUMMARY_MODEL"))
	if v := strings.TrimSpace(getenv("AGENTIK_APPROVAL_TIMEOUT")); v != "" && v != "0" && v != "off" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("AGENTIK_APPROVAL_TIMEOUT must be a duration of 1s or more like 10m (or 0 or off for none), got %q", v)
		}
		c.ApprovalTimeout = d
	}
	if v := strings.TrimSpace(getenv("AGENTIK_DRAIN_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if v == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 {
			return c, fmt.Errorf("AGENTIK_DRAIN_TIMEOUT must be a duration like 30s (0: running turns are not waited for), got %q", v)
		}
		c.DrainTimeout = d
	}
	if v := strings.TrimSpace(getenv("AGENTIK_TURN_CONTINUATIONS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return c, fmt.Errorf("AGENTIK_TURN_CONTINUATIONS must be a number from 0 to 100 (0: a turn whose process died is not continued), got %q", v)
		}
		c.TurnContinuations = n
		if n == 0 {
			c.TurnContinuations = -1
		}
	}
	if v := strings.TrimSpace(getenv("AGENTIK_RECOVER_INTERVAL")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			return c, fmt.Errorf("AGENTIK_RECOVER_INTERVAL must be a duration of 100ms or more like 30s, got %q", v)
		}
		c.RecoverInterval = d
	}
	if v := getenv("AGENTIK_DEFAULT_BUDGET"); v != "" {
		b, err := agent.ParseBudget(v)
		if err != nil {
			return c, fmt.Errorf("AGENTIK_DEFAULT_BUDGET: %w", err)
		}
		c.DefaultBudget = b
	}
	if v := strings.TrimSpace(getenv("AGENTIK_MAX_SCHEDULES")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("AGENTIK_MAX_SCHEDULES must be how many schedules one user may have (1 or more), like 100, got %q", v)
		}
		c.MaxSchedules = n
	}
	if v := strings.TrimSpace(getenv("AGENTIK_SCHEDULE_MIN_INTERVAL")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("AGENTIK_SCHEDULE_MIN_INTERVAL must be a duration of 1s or more, like 1m, got %q", v)
		}
		c.ScheduleMinInterval = d
	}
	for _, p := range splitList(getenv("AGENTIK_TRUSTED_PROXIES")) {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			a, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return c, fmt.Errorf("AGENTIK_TRUSTED_PROXIES: %q is neither an IP address nor a CIDR like 10.0.0.0/8", p)
			}
			pfx = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		c.TrustedProxies = append(c.TrustedProxies, pfx.Masked())
	}
	if v := getenv("AGENTIK_WEBHOOKS"); v != "" {
		urls, err := webhook.ParseURLs(v)
		if err != nil {
			return c, fmt.Errorf("AGENTIK_WEBHOOKS: %w", err)
		}
		c.Webhooks = urls
	}
	c.SecretKey = getenv("AGENTIK_SECRET_KEY")
	if c.SecretKey != "" && len(c.SecretKey) < secret.MinKeyLen {
		return c, fmt.Errorf("AGENTIK_SECRET_KEY must be at least %d characters (got %d); make one with: openssl rand -base64 32", secret.MinKeyLen, len(c.SecretKey))
	}
	c.OAuthRedirect = strings.TrimSpace(getenv("AGENTIK_MCP_OAUTH_REDIRECT_URL"))
	if v := getenv("AGENTIK_WEBHOOK_SECRET"); v != "" || len(c.Webhooks) > 0 {
		key, err := webhook.ParseSecret(v)
		if err != nil {
			return c, fmt.Errorf("AGENTIK_WEBHOOK_SECRET: %w", err)
		}
		c.WebhookSecret = key
	}
	allow, err := a2a.ParsePushAllow(getenv("AGENTIK_PUSH_ALLOW"))
	if err != nil {
		return c, fmt.Errorf("AGENTIK_PUSH_ALLOW: %w", err)
	}
	c.PushAllow = allow
	if v := strings.TrimSpace(getenv("AGENTIK_PUSH_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			return c, fmt.Errorf("AGENTIK_PUSH_TIMEOUT must be a duration like 5m, got %q", v)
		}
		c.PushTimeout = d
	}
	hosts, origins := getenv("AGENTIK_ALLOWED_HOSTS"), getenv("AGENTIK_ALLOWED_ORIGINS")
	level := getenv("AGENTIK_LOG_LEVEL")
	c.LogJSON = strings.EqualFold(getenv("AGENTIK_LOG_FORMAT"), "json")
	c.Demo = getenv("AGENTIK_DEMO") == "1" || strings.EqualFold(getenv("AGENTIK_DEMO"), "true")
	c.Providers, c.Titles = getenv("AGENTIK_PROVIDERS"), getenv("AGENTIK_TITLES")
	switch m := strings.ToLower(getenv("AGENTIK_MEMORY")); m {
	case "", "on":
	case "off":
		c.NoMemory = true
	default:
		return c, fmt.Errorf("AGENTIK_MEMORY must be on or off, got %q", m)
	}
	switch b := strings.ToLower(getenv("AGENTIK_LLM_BACKEND")); b {
	case "", "openai":
	case "google":
		return c, errors.New("AGENTIK_LLM_BACKEND=google (the embedded LiteRT engine) is not available in the Go build; run a local OpenAI-compatible server instead (llama.cpp's llama-server, or Ollama) and set OPENAI_BASE_URL, e.g. http://127.0.0.1:11434/v1")
	default:
		return c, fmt.Errorf("AGENTIK_LLM_BACKEND must be openai, got %q", b)
	}

	fs := flag.NewFlagSet("agentik", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageText) }
	fs.StringVar(&c.Addr, "addr", c.Addr, "")
	fs.StringVar(&c.DB, "db", c.DB, "")
	fs.StringVar(&storeMode, "store-mode", storeMode, "")
	fs.StringVar(&c.SystemPrompt, "system-prompt", c.SystemPrompt, "")
	fs.StringVar(&c.MCPConfig, "mcp-config", c.MCPConfig, "")
	fs.DurationVar(&c.EventTTL, "event-ttl", c.EventTTL, "")
	fs.IntVar(&c.MaxAnswerBytes, "max-answer-bytes", c.MaxAnswerBytes, "")
	fs.StringVar(&hosts, "allowed-hosts", hosts, "")
	fs.StringVar(&origins, "allowed-origins", origins, "")
	fs.BoolVar(&c.Insecure, "insecure", false, "")
	fs.StringVar(&level, "log-level", level, "")
	fs.BoolVar(&c.LogJSON, "log-json", c.LogJSON, "")
	fs.BoolVar(&c.Demo, "demo", c.Demo, "")
	fs.StringVar(&c.Providers, "providers", c.Providers, "")
	fs.StringVar(&c.Titles, "titles", c.Titles, "")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.MaxAnswerBytes < 0 {
		return c, fmt.Errorf("--max-answer-bytes must be a positive number of bytes, got %d", c.MaxAnswerBytes)
	}
	switch c.Titles {
	case "", "model", "first_line":
	default:
		return c, fmt.Errorf("AGENTIK_TITLES must be model or first_line, got %q", c.Titles)
	}
	mode, err := store.ParseMode(storeMode)
	if err != nil {
		return c, fmt.Errorf("AGENTIK_STORE_MODE (--store-mode) must be fast or plain, got %q", storeMode)
	}
	c.StoreMode = mode
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q; see agentik --help", fs.Arg(0))
	}
	if err := signIn(&c, getenv); err != nil {
		return c, err
	}
	c.AllowedHosts, c.AllowedOrigins = splitList(hosts), splitList(origins)
	if level != "" {
		if err := c.LogLevel.UnmarshalText([]byte(level)); err != nil {
			return c, fmt.Errorf("log level must be debug, info, warn or error, got %q", level)
		}
	}
	if c.EventTTL <= 0 {
		return c, fmt.Errorf("--event-ttl must be positive, got %s", c.EventTTL)
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return c, fmt.Errorf("address %q must be host:port, e.g. 127.0.0.1:8080", c.Addr)
	}
	if !isLoopback(host) && len(c.APIKeys) == 0 && c.OIDC == nil && c.TrustedUserHeader == "" && !c.Insecure {
		return c, fmt.Errorf("listening on %q without AGENTIK_API_KEYS exposes every conversation; set AGENTIK_API_KEYS, or pass --insecure if that is what you want", c.Addr)
	}
	if !isLoopback(host) && host != "" {
		c.AllowedHosts = append(c.AllowedHosts, host)
	}
	return c, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redactURL hides the secrets of a URL or DSN for logs (app.RedactURL).
func redactURL(raw string) string { return app.RedactURL(raw) }

// minSCIMToken is the shortest AGENTIK_SCIM_TOKEN: a bearer token an
// identity provider holds, long enough not to be guessed.
const minSCIMToken = 32

// signIn reads the OIDC, SCIM and trusted-header settings.
func signIn(c *config, getenv func(string) string) error {
	c.Admins = splitList(getenv("AGENTIK_ADMINS"))
	switch v := strings.TrimSpace(getenv("AGENTIK_OIDC_SIGNUP")); v {
	case "", "open":
	case "invite":
		c.InviteOnly = true
	default:
		return fmt.Errorf("AGENTIK_OIDC_SIGNUP must be open or invite, got %q", v)
	}
	switch v := strings.TrimSpace(getenv("AGENTIK_SIGNUP")); v {
	case "", agent.SignupClosed, agent.SignupInvite, agent.SignupApproval, agent.SignupOpen:
		c.Signup = v
	default:
		return fmt.Errorf("AGENTIK_SIGNUP must be closed, invite, approval or open, got %q", v)
	}
	switch v := strings.TrimSpace(getenv("AGENTIK_PUBLIC_SHARES")); v {
	case "", "off":
	case "on":
		c.PublicShares = true
	default:
		return fmt.Errorf("AGENTIK_PUBLIC_SHARES must be on or off, got %q", v)
	}
	c.SCIMToken = strings.TrimSpace(getenv("AGENTIK_SCIM_TOKEN"))
	if c.SCIMToken != "" && len(c.SCIMToken) < minSCIMToken {
		return fmt.Errorf("AGENTIK_SCIM_TOKEN must be at least %d characters (got %d); make one with: openssl rand -base64 32", minSCIMToken, len(c.SCIMToken))
	}
	if v := strings.TrimSpace(getenv("AGENTIK_AUDIT_TTL")); v != "" && v != "forever" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Hour {
			return fmt.Errorf("AGENTIK_AUDIT_TTL must be a duration of an hour or more (8760h), or forever; got %q", v)
		}
		c.AuditTTL = d
	}
	c.TrustedUserHeader = strings.TrimSpace(getenv("AGENTIK_TRUSTED_USER_HEADER"))
	if c.TrustedUserHeader != "" && len(c.TrustedProxies) == 0 {
		return errors.New("AGENTIK_TRUSTED_USER_HEADER needs AGENTIK_TRUSTED_PROXIES: the header is believed only from those proxies (anyone else could send it)")
	}
	issuer := strings.TrimSpace(getenv("AGENTIK_OIDC_ISSUER"))
	if issuer == "" {
		return nil
	}
	if u, err := url.Parse(issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("AGENTIK_OIDC_ISSUER must be the provider's issuer URL (https://…), got %q", issuer)
	}
	id := strings.TrimSpace(getenv("AGENTIK_OIDC_CLIENT_ID"))
	if id == "" {
		return errors.New("AGENTIK_OIDC_ISSUER is set without AGENTIK_OIDC_CLIENT_ID: register agentik at the provider and give its client id")
	}
	c.OIDC = &server.OIDCConfig{Issuer: issuer, ClientID: id, ClientSecret: getenv("AGENTIK_OIDC_CLIENT_SECRET"),
		RedirectURL: strings.TrimSpace(getenv("AGENTIK_OIDC_REDIRECT_URL")), Name: strings.TrimSpace(getenv("AGENTIK_OIDC_NAME")),
		Signup: "open", Admins: c.Admins, AdminGroup: strings.TrimSpace(getenv("AGENTIK_OIDC_ADMIN_GROUP"))}
	if c.InviteOnly {
		c.OIDC.Signup = "invite"
	}
	switch v := strings.TrimSpace(getenv("AGENTIK_OIDC_TRUST_UNVERIFIED_EMAIL")); v {
	case "", "off":
	case "on":
		c.OIDC.TrustUnverifiedEmail = true
	default:
		return fmt.Errorf("AGENTIK_OIDC_TRUST_UNVERIFIED_EMAIL must be on or off, got %q", v)
	}
	return nil
}
