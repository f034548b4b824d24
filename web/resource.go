package web

import (
	"net/url"

	"github.com/a-h/templ"

	"github.com/agentik/agentik/internal/agent"
)

// Resource is a tool server's resource a user message attached, or one a
// tool's result linked or embedded.
type Resource struct {
	Server, URI, Name string
	Mime              string // when known
}

// Title is a resource chip's tooltip.
func (r Resource) Title() string {
	t := r.Server + ": " + r.URI
	if r.Mime != "" {
		t += " (" + r.Mime + ")"
	}
	return t
}

// Label is what a resource chip shows: its name, else its URI.
func (r Resource) Label() string {
	if r.Name != "" {
		return r.Name
	}
	return r.URI
}

// FileRef is a file a user message attached: a chip that opens its bytes.
type FileRef struct {
	ID, Name, Mime string
}

// URL is where the file's bytes are read (as an attachment, sandboxed).
func (f FileRef) URL() templ.SafeURL {
	return templ.SafeURL("/agentik/files/" + url.PathEscape(f.ID) + "/content")
}

// filesOf are the file parts of cs.
func filesOf(cs []agent.Content) []FileRef {
	var out []FileRef
	for _, c := range cs {
		if c.Type == agent.ContentFile {
			out = append(out, FileRef{ID: c.FileID, Name: c.Name, Mime: c.Mime})
		}
	}
	return out
}

// resourcesOf are the resource parts of cs.
func resourcesOf(cs []agent.Content) []Resource {
	var out []Resource
	for _, c := range cs {
		if c.Type == agent.ContentResource {
			out = append(out, Resource{Server: c.Server, URI: c.URI, Name: c.Name, Mime: c.Mime})
		}
	}
	return out
}
