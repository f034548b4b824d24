package scim

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// The small part of SCIM's filter language (RFC 7644 §3.4.2.2) identity
// providers use: one attribute compared with eq to a string, in a list's
// filter (userName eq "ann@example.com", displayName eq "eng") and in a
// PATCH path's value filter (emails[type eq "work"].value,
// members[value eq "id"]). Anything else is 400 invalidFilter.

// eqFilter is `attr eq "value"`.
var eqFilter = regexp.MustCompile(`^\s*([A-Za-z][\w.:-]*)\s+(?i:eq)\s+("(?:[^"\\]|\\.)*")\s*$`)

// valuePath is `attr[sub eq "value"]` with an optional `.subattr`.
var valuePath = regexp.MustCompile(`^([A-Za-z][\w]*)\[\s*([A-Za-z][\w]*)\s+(?i:eq)\s+("(?:[^"\\]|\\.)*")\s*\](?:\.([A-Za-z][\w]*))?$`)

// filter is a parsed eq filter: attribute (lowercased) and value.
type filter struct {
	attr, value string
}

// parseFilter parses a list's filter; allowed are the attributes (in
// lower case) it may compare.
func parseFilter(s string, allowed ...string) (*filter, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := eqFilter.FindStringSubmatch(s)
	if m == nil {
		return nil, errBad("invalidFilter", `the filter is not supported: use ATTRIBUTE eq "VALUE" (one of `+strings.Join(allowed, ", ")+`)`)
	}
	attr := strings.ToLower(stripURN(m[1]))
	ok := false
	for _, a := range allowed {
		ok = ok || a == attr
	}
	if !ok {
		return nil, errBad("invalidFilter", "filtering by "+m[1]+" is not supported: use one of "+strings.Join(allowed, ", "))
	}
	var v string
	if err := json.Unmarshal([]byte(m[2]), &v); err != nil {
		return nil, errBad("invalidFilter", "the filter's value is not a string")
	}
	return &filter{attr: attr, value: v}, nil
}

// stripURN cuts a core schema's URN off an attribute path
// (urn:…:core:2.0:User:userName is userName).
func stripURN(p string) string {
	for _, s := range []string{SchemaUser, SchemaGroup} {
		if len(p) > len(s) && strings.EqualFold(p[:len(s)], s) && p[len(s)] == ':' {
			return p[len(s)+1:]
		}
	}
	return p
}

// page is a list request's paging (RFC 7644 §3.4.2.4): startIndex is
// 1-based; count 0 asks for the total only.
type page struct {
	start, count int
}

func parsePage(r *http.Request) (page, error) {
	p := page{start: 1, count: defaultCount}
	q := r.URL.Query()
	if v := q.Get("startIndex"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return p, errBad("invalidValue", "startIndex must be an integer")
		}
		p.start = max(n, 1)
	}
	if v := q.Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return p, errBad("invalidValue", "count must be an integer")
		}
		p.count = min(max(n, 0), maxCount)
	}
	return p, nil
}

// listResponse is the page p of all.
func listResponse[T any](all []T, p page) map[string]any {
	from := min(p.start-1, len(all))
	to := min(from+p.count, len(all))
	return map[string]any{
		"schemas":      []string{SchemaListResponse},
		"totalResults": len(all),
		"startIndex":   p.start,
		"itemsPerPage": to - from,
		"Resources":    append([]T{}, all[from:to]...),
	}
}

// patchRequest is a PATCH body (RFC 7644 §3.5.2).
type patchRequest struct {
	Schemas    []string `json:"schemas"`
	Operations []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	} `json:"Operations"`
}

// patchOp is one operation, its op lowercased (Entra sends "Replace").
type patchOp struct {
	op    string // add, replace, remove
	path  string // "" for a value of attributes
	value json.RawMessage
}

// readPatch decodes and checks a PATCH body.
func readPatch(r *http.Request) ([]patchOp, error) {
	var req patchRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if len(req.Operations) == 0 {
		return nil, errBad("invalidSyntax", "a PATCH needs Operations")
	}
	out := make([]patchOp, 0, len(req.Operations))
	for _, o := range req.Operations {
		op := strings.ToLower(o.Op)
		switch op {
		case "add", "replace", "remove":
		default:
			return nil, errBad("invalidSyntax", "op must be add, replace or remove, got "+strconv.Quote(o.Op))
		}
		path := stripURN(strings.TrimSpace(o.Path))
		if path == "" && op == "remove" {
			return nil, errBad("noTarget", "a remove needs a path")
		}
		if path == "" && !isObject(o.Value) {
			return nil, errBad("invalidValue", "an "+op+" without a path needs an object of attributes as its value")
		}
		out = append(out, patchOp{op: op, path: path, value: o.Value})
	}
	return out, nil
}

func isObject(v json.RawMessage) bool {
	s := strings.TrimSpace(string(v))
	return strings.HasPrefix(s, "{")
}

// flexBool is a boolean as identity providers send it: true, or "True"
// (Entra ID sends booleans as strings).
type flexBool bool

func (b *flexBool) UnmarshalJSON(data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case bool:
		*b = flexBool(x)
		return nil
	case string:
		if p, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(x))); err == nil {
			*b = flexBool(p)
			return nil
		}
	}
	return errBad("invalidValue", "a boolean must be true or false, got "+string(data))
}

// str reads a JSON string value (a number or boolean as its text).
func str(v json.RawMessage) (string, error) {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return "", errBad("invalidValue", "the value is not JSON")
	}
	switch t := x.(type) {
	case string:
		return t, nil
	case nil:
		return "", nil
	case bool, float64:
		return strings.Trim(string(v), `"`), nil
	}
	return "", errBad("invalidValue", "the value must be a string, got "+string(v))
}
