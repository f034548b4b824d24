package tool

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

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
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", v.Name, v.URI))
		case mcp.EmbeddedResource:
			switch r := v.Resource.(type) {
			case mcp.TextResourceContents:
				parts = append(parts, r.Text)
			case mcp.BlobResourceContents:
				parts = append(parts, fmt.Sprintf("[resource %s %s, %d bytes of base64]", r.URI, r.MIMEType, len(r.Blob)))
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
