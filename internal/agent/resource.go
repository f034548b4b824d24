package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MCP resources and prompts (DESIGN.md §11.6): the tool servers offer
// documents (resources) and message templates (prompts) besides tools.
// A user attaches a resource to a message as a Content part
// {"type":"resource","server","uri"}: the stored message (the audit)
// keeps that reference, and the working memory gets what the resource
// said when it was sent (its text, or its image), so the model reads it
// on every later call without the server being asked again. Memory
// rebuilt from the audit (a branch switch, an edit) reads it again.

// ContentResource is the type of a Content part that references a
// resource of a tool server (Server, URI; Name is only for display).
const ContentResource = "resource"

// maxResourceMime caps the (display-only) mime type of a resource part.
const maxResourceMime = 255

// Resource is one resource a tool server lists.
type Resource struct {
	Server      string `json:"server"`
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mime_type,omitempty"`
	Size        *int64 `json:"size,omitempty"`
}

// ResourceTemplate is a family of resources a tool server can read, named
// by an RFC 6570 URI template (demo://resource/dynamic/text/{id}).
type ResourceTemplate struct {
	Server      string `json:"server"`
	URITemplate string `json:"uri_template"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mime_type,omitempty"`
}

// ResourceList is every resource and template of the servers a caller
// may use.
type ResourceList struct {
	Resources []Resource         `json:"resources"`
	Templates []ResourceTemplate `json:"templates"`
}

// ResourceContents is one part of a read resource: Text, or Blob
// (base64).
type ResourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mime_type,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
	// UI is an MCP App's _meta.ui (its csp, permissions, prefersBorder),
	// for a resource of MIME text/html;profile=mcp-app.
	UI map[string]any `json:"ui,omitempty"`
}

// ResourceRead is what reading a resource returned.
type ResourceRead struct {
	Server   string             `json:"server"`
	URI      string             `json:"uri"`
	Contents []ResourceContents `json:"contents"`
}

// Resources lists and reads the tool servers' resources (package tool
// implements it). Errors are *Error: not_found for an unknown server or
// resource, unavailable for a server that is not running. Subscribe
// follows a resource's updates (its implementation publishes them as
// resource_updated events); a server that cannot is not an error.
type Resources interface {
	Resources(ctx context.Context) (ResourceList, error)
	ReadResource(ctx context.Context, server, uri string) (ResourceRead, error)
	Subscribe(ctx context.Context, server, uri string) error
}

// ResourceRef names one resource of a tool server.
type ResourceRef struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

// ResourceUpdatedEvent is the live agent event that says a resource
// changed. It is never stored, so it has no seq.
func ResourceUpdatedEvent(server, uri string, now time.Time) AllEvent {
	return AllEvent{Kind: KindAgent, ID: NewID(), Date: now, Agent: &AgentEvent{Type: AgentResourceUpdated, Resource: &ResourceRef{Server: server, URI: uri}}}
}

// subscribeResources follows the resources content attaches, so clients
// that show them hear when they change; a failure is only logged.
func (r *Runner) subscribeResources(ctx context.Context, content []Content) {
	if r.cfg.Resources == nil {
		return
	}
	for _, c := range content {
		if c.Type != ContentResource {
			continue
		}
		if err := r.cfg.Resources.Subscribe(ctx, c.Server, c.URI); err != nil {
			r.log.Warn("resource_subscribe_failed", "server", c.Server, "uri", c.URI, "err", err)
		}
	}
}

// Prompt is one prompt a tool server lists.
type Prompt struct {
	Server      string           `json:"server"`
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments"`
}

// PromptArgument is one argument a prompt takes (always a string).
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptMessage is one message of an expanded prompt: a role (user or
// assistant) and its parts (text, image, or a resource reference).
type PromptMessage struct {
	Role    string    `json:"role"`
	Content []Content `json:"content"`
}

// PromptResult is an expanded prompt.
type PromptResult struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
}

// Prompts lists and expands the tool servers' prompts (package tool
// implements it). Errors are *Error: not_found for an unknown server or
// prompt, bad_request naming a missing or unknown argument.
type Prompts interface {
	Prompts(ctx context.Context) ([]Prompt, error)
	Prompt(ctx context.Context, server, name string, args map[string]string) (PromptResult, error)
}

// mayUseServers is the one rule of whose tool servers' resources and
// prompts a principal may use: every signed-in principal may use every
// configured server, as every principal's turns may call every tool
// (an agent's tool patterns narrow what its model is offered, not what
// its user may read). A caller without a user sees none.
func mayUseServers(ctx context.Context) error {
	if PrincipalFrom(ctx).UserID == "" {
		return Errorf(CodeForbidden, "sign in to use the tool servers' resources and prompts")
	}
	return nil
}

// errNoServer is the error of a server that is not configured.
func errNoServer(server string) error {
	return Errorf(CodeNotFound, "tool server %q not found; GET /agentik/tools lists the configured servers", server)
}

// Resources lists the resources and templates of every tool server ctx's
// principal may use.
func (r *Runner) Resources(ctx context.Context) (ResourceList, error) {
	if err := mayUseServers(ctx); err != nil {
		return ResourceList{}, err
	}
	if r.cfg.Resources == nil {
		return ResourceList{Resources: []Resource{}, Templates: []ResourceTemplate{}}, nil
	}
	return r.cfg.Resources.Resources(ctx)
}

// ReadResource reads one resource of a tool server.
func (r *Runner) ReadResource(ctx context.Context, server, uri string) (ResourceRead, error) {
	if err := mayUseServers(ctx); err != nil {
		return ResourceRead{}, err
	}
	if err := checkResourceRef(server, uri); err != nil {
		return ResourceRead{}, err
	}
	if r.cfg.Resources == nil {
		return ResourceRead{}, errNoServer(server)
	}
	return r.cfg.Resources.ReadResource(ctx, server, uri)
}

// Prompts lists the prompts of every tool server ctx's principal may use.
func (r *Runner) Prompts(ctx context.Context) ([]Prompt, error) {
	if err := mayUseServers(ctx); err != nil {
		return nil, err
	}
	if r.cfg.Prompts == nil {
		return []Prompt{}, nil
	}
	return r.cfg.Prompts.Prompts(ctx)
}

// Prompt expands one prompt of a tool server with args.
func (r *Runner) Prompt(ctx context.Context, server, name string, args map[string]string) (PromptResult, error) {
	if err := mayUseServers(ctx); err != nil {
		return PromptResult{}, err
	}
	if server == "" {
		return PromptResult{}, Errorf(CodeBadRequest, "server is required: the tool server whose prompt to get")
	}
	if name == "" {
		return PromptResult{}, Errorf(CodeBadRequest, "name is required: the prompt to get")
	}
	if r.cfg.Prompts == nil {
		return PromptResult{}, errNoServer(server)
	}
	return r.cfg.Prompts.Prompt(ctx, server, name, args)
}

// checkResourceRef checks the fields of a resource reference.
func checkResourceRef(server, uri string) error {
	if server == "" {
		return Errorf(CodeBadRequest, "server is required: the tool server that has the resource")
	}
	if uri == "" {
		return Errorf(CodeBadRequest, "uri is required: the resource's URI, as GET /agentik/resources lists it")
	}
	return nil
}

// hasResource reports whether content references a resource.
func hasResource(content []Content) bool {
	for _, c := range content {
		if c.Type == ContentResource {
			return true
		}
	}
	return false
}

// modelContent is content, of a message of conversation id, as the model
// reads it: each resource part replaced by what the resource says now,
// each file part given the file's text (filepart.go). strict (a send)
// fails on a resource or file that cannot be read, so nothing is stored;
// otherwise (a queued send starting, memory rebuilt) the part becomes a
// note saying why, and the turn goes on.
func (r *Runner) modelContent(ctx context.Context, id string, content []Content, strict bool) ([]Content, error) {
	return r.modelContentIn(ctx, r.inlineBudget(ctx, id), content, strict)
}

// modelContentIn is modelContent with budget bytes for the files inlined
// (inlineBudgetOf).
func (r *Runner) modelContentIn(ctx context.Context, budget int, content []Content, strict bool) ([]Content, error) {
	if hasFile(content) {
		files, err := r.fileParts(ctx, budget, content, strict)
		if err != nil {
			return nil, err
		}
		content = files
	}
	if !hasResource(content) {
		return content, nil
	}
	out := make([]Content, 0, len(content))
	for i, c := range content {
		if c.Type != ContentResource {
			out = append(out, c)
			continue
		}
		var read ResourceRead
		var err error
		if strict {
			read, err = r.ReadResource(ctx, c.Server, c.URI) // the sender's permission
		} else if r.cfg.Resources == nil {
			err = errNoServer(c.Server)
		} else {
			read, err = r.cfg.Resources.ReadResource(ctx, c.Server, c.URI)
		}
		if err != nil {
			if strict {
				var e *Error
				if errors.As(err, &e) {
					return nil, Errorf(e.Code, "content[%d]: %s", i, e.Message)
				}
				return nil, fmt.Errorf("content[%d]: %w", i, err)
			}
			out = append(out, Text(fmt.Sprintf("[resource %s of tool server %s could not be read: %v]", c.URI, c.Server, err)))
			continue
		}
		out = append(out, resourceParts(read)...)
	}
	return out, nil
}

// resourceParts is what the model reads of a read resource: a text part
// that names it and holds its text, and its images as image parts (other
// binary contents are described).
func resourceParts(read ResourceRead) []Content {
	var b strings.Builder
	fmt.Fprintf(&b, "[resource %s from tool server %s]", read.URI, read.Server)
	var images []Content
	for _, c := range read.Contents {
		switch {
		case c.Blob != "" && imageMime(c.MimeType):
			images = append(images, Content{Type: ContentImage, Mime: c.MimeType, Data: c.Blob})
		case c.Blob != "":
			fmt.Fprintf(&b, "\n[%s: binary %s, %d bytes of base64]", c.URI, c.MimeType, len(c.Blob))
		default:
			if len(read.Contents) > 1 {
				fmt.Fprintf(&b, "\n[%s]", c.URI)
			}
			b.WriteString("\n")
			b.WriteString(c.Text)
		}
	}
	return append([]Content{Text(b.String())}, images...)
}

// imageMime reports whether a model may be shown an image of mime.
func imageMime(mime string) bool {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// memoryResources reads again the resources and files that user messages
// of mem (rebuilt from the audit, which keeps only references) attach.
func (r *Runner) memoryResources(ctx context.Context, id string, mem []ModelMessage) []ModelMessage {
	for i, m := range mem {
		if m.Role != RoleUser || (!hasResource(m.Content) && !hasFile(m.Content)) {
			continue
		}
		mem[i].Content, _ = r.modelContent(ctx, id, m.Content, false)
	}
	return mem
}
