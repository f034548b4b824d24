// Package tool gives the model the tools of the MCP servers the operator
// configured in an mcp.json (Claude Desktop's format, and VS Code's
// "servers"), through github.com/mark3labs/mcp-go. It implements
// agent.Tools.
//
// # Config
//
// LoadConfig reads the file named by AGENTIK_MCP_CONFIG. Each entry is a
// stdio server (command, args, env, cwd) or a remote one (url, headers;
// type http for streamable HTTP, sse for the older HTTP+SSE transport, or
// no type: streamable HTTP first, then SSE). ${VAR} and ${VAR:-default}
// (and VS Code's ${env:VAR}) are expanded in every string; an unset
// variable, an unknown type or a malformed entry is a *ConfigError naming
// the server and the field. Disabled entries are checked but not expanded.
//
// # Names
//
// The model sees a tool as <server>__<tool>, every character outside
// [A-Za-z0-9_-] replaced by '_', at most 64 bytes (longer names are cut and
// get a hash of the original). When two tools would get the same name, the
// one of the server later in name order gets a hash suffix.
//
// # Supervision
//
// Start returns at once; each server runs under its own goroutine, owned
// by the Manager, which connects (for stdio: starts the process), lists the
// tools (all pages) and keeps them current on tools/list_changed. A server
// that dies, or whose connection breaks, is restarted with exponential
// backoff (250ms doubling to 30s, reset after 30s of good health) and its
// tools re-registered. Meanwhile its tools stay listed, and calls fail at
// once with tool_error saying the server is restarting and why.
//
// A call ends after CallTimeout without an answer or a progress
// notification, and after MaxCallTimeout in any case. Results are rendered
// as text (images and blobs described, not inlined) and cut to
// MaxResultBytes; images also come back as images, and resource links and
// embedded resources as references to the server's resources, for the
// tool card (agent.ToolOutput). Every failure, including the tool's own isError result,
// is an *agent.Error with agent.CodeToolError: the runner turns it into a
// tool_result with is_error and the turn goes on.
//
// # Safety
//
// A stdio server gets a clean environment: PATH, HOME, USER, LANG and TERM
// of ours, and its entry's env; nothing else of ours (OPENAI_API_KEY, …)
// reaches it. It leads its own process group: when its leader exits the
// rest of the group is killed (an npx wrapper's node with it), and Close
// ends each group with stdin closed, SIGTERM, then SIGKILL. Values of env
// and headers, and whatever a ${VAR} expanded to, are removed from errors
// and logs; clients only ever see agent.ToolServer.
//
// # Visibility
//
// Servers reports each server's state (starting, ready, restarting,
// failed, disabled), its last error and its tools; OnChange is called on
// every change, for the runtime to publish as a live tool_server event.
package tool
