package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentik/agentik/internal/agent"
)

// knowledgeResources are the knowledge bases the caller may read, as
// resources (on the first page of resources/list).
func (h *Handler) knowledgeResources(ctx context.Context) []mcp.Resource {
	if h.cfg.Files == nil {
		return nil
	}
	ks, err := h.cfg.Files.Knowledges(ctx)
	if err != nil {
		h.log.Warn("mcp_knowledge_resources_failed", "err", err)
		return nil
	}
	out := make([]mcp.Resource, 0, len(ks))
	for _, k := range ks {
		out = append(out, mcp.NewResource(knowledgePrefix+k.ID, k.Name,
			mcp.WithResourceDescription(fmt.Sprintf("agentik knowledge base, %d files (%s)", k.Counts.Total, k.Visibility)),
			mcp.WithMIMEType("text/markdown")))
	}
	return out
}

// readKnowledge reads a knowledge base: its description and its files.
func (h *Handler) readKnowledge(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	id, ok := strings.CutPrefix(req.Params.URI, knowledgePrefix)
	if !ok || id == "" || h.cfg.Files == nil {
		return nil, server.ErrResourceNotFound
	}
	k, err := h.cfg.Files.Knowledge(ctx, id)
	if errors.Is(err, agent.ErrNotFound) {
		return nil, server.ErrResourceNotFound
	}
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", k.Name)
	if k.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", k.Description)
	}
	fmt.Fprintf(&b, "\n%d files: %d processed, %d processing, %d failed.\n\n", k.Counts.Total, k.Counts.Processed, k.Counts.Processing, k.Counts.Failed)
	for _, fid := range k.FileIDs {
		f, err := h.cfg.Files.KnowledgeFile(ctx, k, fid)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "- %s (%s, %s, %d passages)\n", f.Name, f.MediaType, f.Status, f.Chunks)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/markdown", Text: b.String()}}, nil
}
