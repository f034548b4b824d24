package web

import "github.com/agentik/agentik/internal/agent"

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
