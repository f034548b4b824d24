package server

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// OAuth 2.0 Protected Resource Metadata (RFC 9728) for /mcp: an MCP
// client that speaks OAuth first (the MCP authorization spec) reads, on
// a 401, WWW-Authenticate's resource_metadata and then this document. It
// names /mcp as the resource and bearer tokens in the Authorization header
// as the way in: an agentik API key (AGENTIK_API_KEYS, or a user's key
// made on the people page or with `agentik user key`). agentik is no
// OAuth authorization server and accepts no provider's access tokens, so
// the document lists no authorization_servers; with OIDC configured it
// points people at agentik's sign-in with that provider (where they make a
// key) as its documentation.

// resourceMetadataPath is where the metadata of the resource /mcp is
// (RFC 9728 §3.1: the well-known prefix before the resource's path); the
// bare prefix serves the same document for clients that try it first.
const (
	resourceMetadataRoot = "/.well-known/oauth-protected-resource"
	resourceMetadataPath = resourceMetadataRoot + "/mcp"
)

// mcpResource reports whether path is the MCP server's.
func mcpResource(path string) bool { return path == "/mcp" || strings.HasPrefix(path, "/mcp/") }

// origin is the scheme and host r reached agentik at.
func (s *Server) origin(r *http.Request) string {
	if s.secure(r) {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// resourceChallenge is the WWW-Authenticate of a 401: for /mcp it points
// at the resource's metadata.
func (s *Server) resourceChallenge(r *http.Request) string {
	if !mcpResource(r.URL.Path) {
		return `Bearer realm="agentik"`
	}
	return `Bearer realm="agentik", resource_metadata="` + s.origin(r) + resourceMetadataPath + `"`
}

// handleResourceMetadata serves /mcp's protected-resource metadata; with
// no authentication on there is nothing to protect (404).
func (s *Server) handleResourceMetadata(w http.ResponseWriter, r *http.Request) {
	if !s.authOn() {
		s.writeError(w, r, agent.Errorf(agent.CodeNotFound, "this agentik needs no credentials: /mcp is open"))
		return
	}
	doc := "https://github.com/agentik/agentik#mcp-server"
	if s.cfg.OIDC != nil {
		doc = s.origin(r) + "/login"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"resource":                 s.origin(r) + "/mcp",
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "agentik: send an agentik API key as Authorization: Bearer <key>",
		"resource_documentation":   doc,
	})
}
