package tool

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentik/agentik/internal/agent"
	"github.com/mark3labs/mcp-go/mcp"
)

// resultText renders a tool result as the text the model reads. Images,
// audio and blobs are described, not inlined: the model cannot read base64.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch v := c.(type) {
		case mcp.TextContent:
			parts = append(parts, v.Text)
		case mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes of base64]", v.MIMEType, len(v.Data)))
		case mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes of base64]", v.MIMEType, len(v.Data)))
		case mcp.ResourceLink:
			// The model learns what it links to; the user opens or
			// attaches it from the card (resultResources).
			link := fmt.Sprintf("[resource link %q: %s", linkName(v), v.URI)
			if v.MIMEType != "" {
				link += " (" + v.MIMEType + ")"
			}
			if v.Description != "" {
				link += " — " + v.Description
			}
			parts = append(parts, link+"]")
		case mcp.EmbeddedResource:
			switch r := v.Resource.(type) {
			case mcp.TextResourceContents:
				parts = append(parts, fmt.Sprintf("[resource %s%s]\n%s", r.URI, mimeNote(r.MIMEType), r.Text))
			case mcp.BlobResourceContents:
				parts = append(parts, fmt.Sprintf("[resource %s%s, %d bytes of base64]", r.URI, mimeNote(r.MIMEType), len(r.Blob)))
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	if len(parts) == 0 {
		if len(res.RawStructuredContent) > 0 {
			return string(res.RawStructuredContent)
		}
		if res.StructuredContent != nil {
			if b, err := json.Marshal(res.StructuredContent); err == nil {
				return string(b)
			}
		}
	}
	return strings.Join(parts, "\n")
}

func mimeNote(m string) string {
	if m == "" {
		return ""
	}
	return " (" + m + ")"
}

func linkName(l mcp.ResourceLink) string {
	if l.Title != "" {
		return l.Title
	}
	if l.Name != "" {
		return l.Name
	}
	return l.URI
}

// Bounds of the resources a result shows in its card.
const (
	maxResultResources = 32
	maxResourceURI     = 2048
	maxResourceName    = 200
)

// resultResources are the resources a tool result linked (resource_link)
// or embedded (resource), as references to server's resources for the
// tool card: the user opens them (resources/read) or attaches them to a
// message. At most maxResultResources; a URI too long to be one is left
// out (the text still says it).
func resultResources(res *mcp.CallToolResult, server string) []agent.Content {
	var out []agent.Content
	add := func(uri, name, mime string) {
		if uri == "" || len(uri) > maxResourceURI || len(out) >= maxResultResources || !utf8.ValidString(uri) {
			return
		}
		if len(mime) > 255 {
			mime = ""
		}
		out = append(out, agent.Content{Type: agent.ContentResource, Server: server, URI: uri, Name: agent.Shorten(name, maxResourceName), Mime: mime})
	}
	for _, c := range res.Content {
		switch v := c.(type) {
		case mcp.ResourceLink:
			add(v.URI, linkName(v), v.MIMEType)
		case mcp.EmbeddedResource:
			switch r := v.Resource.(type) {
			case mcp.TextResourceContents:
				add(r.URI, "", r.MIMEType)
			case mcp.BlobResourceContents:
				add(r.URI, "", r.MIMEType)
			}
		}
	}
	return out
}

// capText cuts s to at most max bytes (on a UTF-8 boundary) and says so, so
// that neither the model's context nor the database takes a huge result.
func capText(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	// keep ≤ len(s), so this note is at least as long as the final one.
	note := fmt.Sprintf("\n[truncated: %d of %d bytes shown]", len(s), len(s))
	keep := max - len(note)
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + fmt.Sprintf("\n[truncated: %d of %d bytes shown]", keep, len(s))
}
