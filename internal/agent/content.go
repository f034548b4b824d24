package agent

import "encoding/json"

// Content types.
const (
	ContentText  = "text"
	ContentImage = "image"
)

// Content is one part of a message: text, an image, or a reference to a
// tool server's resource. A part of a type this
// version does not know keeps its JSON in Raw and is written back unchanged.
type Content struct {
	Type string `wire:"type,*"`
	Body string `wire:"body,text"`            // text
	Mime string `wire:"mime,image,resource?"` // image; a resource's, when known
	Data string `wire:"data,image"`           // image, base64
	// Server, URI and Name reference a tool server's resource (resource.go).
	Server string          `wire:"server,resource"`
	URI    string          `wire:"uri,resource"`
	Name   string          `wire:"name,resource?"` // for display only
	Raw    json.RawMessage `wire:"-raw"`           // a type this version does not know
}

// Text is a text Content.
func Text(body string) Content { return Content{Type: ContentText, Body: body} }

// MarshalJSON implements json.Marshaler.
func (c Content) MarshalJSON() ([]byte, error) { return encodeWire(c) }

// UnmarshalJSON implements json.Unmarshaler.
func (c *Content) UnmarshalJSON(b []byte) error { return decodeWire(b, c) }
