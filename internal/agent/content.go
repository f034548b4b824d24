package agent

import "encoding/json"

// Content types.
const (
	ContentText  = "text"
	ContentImage = "image"
)

// Content is one part of a message: text, an image, a reference to a
// tool server's resource, or a file (filepart.go). A part of a type this
// version does not know keeps its JSON in Raw and is written back unchanged.
type Content struct {
	Type string `wire:"type,*"`
	Body string `wire:"body,text,file?"`            // text; a file's as the model reads it (working memory only)
	Mime string `wire:"mime,image,resource?,file?"` // image; a resource's, when known; a file's media type
	Data string `wire:"data,image,file?"`           // image, base64; a file's bytes to upload (filepart.go)
	// FileID references a file of the sender's (filepart.go).
	FileID string `wire:"file_id,file?"`
	// Server, URI and Name reference a tool server's resource (resource.go).
	Server string          `wire:"server,resource"`
	URI    string          `wire:"uri,resource"`
	Name   string          `wire:"name,resource?,file?"` // for display only
	Raw    json.RawMessage `wire:"-raw"`                 // a type this version does not know
}

// Text is a text Content.
func Text(body string) Content { return Content{Type: ContentText, Body: body} }

// MarshalJSON implements json.Marshaler.
func (c Content) MarshalJSON() ([]byte, error) { return encodeWire(c) }

// UnmarshalJSON implements json.Unmarshaler.
func (c *Content) UnmarshalJSON(b []byte) error { return decodeWire(b, c) }
