package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// An elicitation's requested schema is a flat object whose properties are
// primitives (MCP 2025-11-25, elicitation): string (minLength, maxLength,
// format email | uri | date | date-time, enum, oneOf of const), number and
// integer (minimum, maximum), boolean, and arrays of enum strings
// (items.enum or items.anyOf of const; minItems, maxItems); "required"
// lists the properties that must be given. checkElicitContent holds an
// answer to it, so that a tool never gets content its schema refuses.

// elicitSchema is the part of a requested schema the check reads.
type elicitSchema struct {
	Properties map[string]elicitProperty `json:"properties"`
	Required   []string                  `json:"required"`
}

type elicitProperty struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Format    string       `json:"format"`
	MinLength *int         `json:"minLength"`
	MaxLength *int         `json:"maxLength"`
	Minimum   *float64     `json:"minimum"`
	Maximum   *float64     `json:"maximum"`
	Enum      []string     `json:"enum"`
	OneOf     []elicitEnum `json:"oneOf"`
	AnyOf     []elicitEnum `json:"anyOf"`
	MinItems  *int         `json:"minItems"`
	MaxItems  *int         `json:"maxItems"`
	Items     *struct {
		Enum  []string     `json:"enum"`
		AnyOf []elicitEnum `json:"anyOf"`
		OneOf []elicitEnum `json:"oneOf"`
	} `json:"items"`
}

type elicitEnum struct {
	Const string `json:"const"`
}

// choices are the values an enum property allows (nil: any).
func choices(enum []string, of ...[]elicitEnum) []string {
	if len(enum) > 0 {
		return enum
	}
	var out []string
	for _, list := range of {
		for _, e := range list {
			out = append(out, e.Const)
		}
	}
	return out
}

// checkElicitContent returns content (a JSON object) once it matches
// schema, or a bad_request error naming the first field that does not.
func checkElicitContent(schema, content json.RawMessage) (json.RawMessage, error) {
	bad := func(field, format string, args ...any) error {
		return Errorf(CodeBadRequest, "content.%s: %s", field, fmt.Sprintf(format, args...))
	}
	var s elicitSchema
	if len(schema) > 0 {
		if err := json.Unmarshal(schema, &s); err != nil {
			return nil, Errorf(CodeBadRequest, "the request's schema cannot be read: %v", err)
		}
	}
	if len(bytes.TrimSpace(content)) == 0 || string(bytes.TrimSpace(content)) == "null" {
		content = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(content, &obj); err != nil || obj == nil {
		return nil, Errorf(CodeBadRequest, "content must be a JSON object with the form's fields")
	}
	for _, name := range s.Required {
		if v, ok := obj[name]; !ok || string(v) == "null" {
			return nil, bad(name, "is required")
		}
	}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		raw := obj[name]
		p, ok := s.Properties[name]
		if !ok {
			return nil, bad(name, "is not a field of this form")
		}
		if string(raw) == "null" {
			continue
		}
		switch p.Type {
		case "string":
			var v string
			if json.Unmarshal(raw, &v) != nil {
				return nil, bad(name, "must be a string")
			}
			n := len([]rune(v))
			if p.MinLength != nil && n < *p.MinLength {
				return nil, bad(name, "must be at least %d characters long", *p.MinLength)
			}
			if p.MaxLength != nil && n > *p.MaxLength {
				return nil, bad(name, "must be at most %d characters long", *p.MaxLength)
			}
			if c := choices(p.Enum, p.OneOf, p.AnyOf); c != nil && !slices.Contains(c, v) {
				return nil, bad(name, "must be one of %s", strings.Join(c, ", "))
			}
			if err := checkFormat(p.Format, v); err != "" {
				return nil, bad(name, "%s", err)
			}
		case "number", "integer":
			var v float64
			if json.Unmarshal(raw, &v) != nil {
				return nil, bad(name, "must be a number")
			}
			if p.Type == "integer" && v != math.Trunc(v) {
				return nil, bad(name, "must be a whole number")
			}
			if p.Minimum != nil && v < *p.Minimum {
				return nil, bad(name, "must be at least %v", *p.Minimum)
			}
			if p.Maximum != nil && v > *p.Maximum {
				return nil, bad(name, "must be at most %v", *p.Maximum)
			}
		case "boolean":
			var v bool
			if json.Unmarshal(raw, &v) != nil {
				return nil, bad(name, "must be true or false")
			}
		case "array":
			var v []string
			if json.Unmarshal(raw, &v) != nil {
				return nil, bad(name, "must be a list of strings")
			}
			if p.MinItems != nil && len(v) < *p.MinItems {
				return nil, bad(name, "must have at least %d items", *p.MinItems)
			}
			if p.MaxItems != nil && len(v) > *p.MaxItems {
				return nil, bad(name, "must have at most %d items", *p.MaxItems)
			}
			if p.Items != nil {
				if c := choices(p.Items.Enum, p.Items.AnyOf, p.Items.OneOf); c != nil {
					for _, x := range v {
						if !slices.Contains(c, x) {
							return nil, bad(name, "%q is not one of %s", Shorten(x, 40), strings.Join(c, ", "))
						}
					}
				}
			}
		}
	}
	out, _ := json.Marshal(obj)
	return out, nil
}

// checkFormat says what is wrong with v in a string format, "" if nothing.
func checkFormat(format, v string) string {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(v); err != nil || a.Address != v {
			return "must be an email address"
		}
	case "uri":
		if u, err := url.Parse(v); err != nil || u.Scheme == "" {
			return "must be a URI, like https://example.com"
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, v); err != nil {
			return "must be a date, like 2026-12-01"
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			return "must be a date and time, like 2026-12-01T13:00:00Z"
		}
	}
	return ""
}
