package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentik/agentik/internal/agent"
)

// JSONProblem says in words what is wrong with the JSON document body that
// json.Unmarshal (or a json.Decoder over body) refused with err: where
// (line and column) and what was expected there, or which field must have
// which kind of value. It never passes on the decoder's own text
// ("invalid character 'o' in literal null"), which names the parser's
// states, not the document.
func JSONProblem(body []byte, err error) string {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return syntaxProblem(body, se)
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		at := position(body, te.Offset)
		if te.Field == "" {
			return fmt.Sprintf("expected %s, found %s (%s)", kindWords(te.Type), valueWords(te.Value), at)
		}
		return fmt.Sprintf("field %q must be %s, not %s (%s)", te.Field, kindWords(te.Type), valueWords(te.Value), at)
	}
	if pe, ok := errors.AsType[*time.ParseError](err); ok {
		return fmt.Sprintf("a time must be written as in RFC 3339, like \"2026-01-02T15:04:05Z\", not %q", agent.Shorten(pe.Value, 40))
	}
	if ae, ok := errors.AsType[*agent.Error](err); ok {
		return ae.Message
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return "there is no field " + f
	}
	return msg
}

// syntaxExpected maps the context of the decoder's "invalid character"
// message to what the document should have had there.
var syntaxExpected = map[string]string{
	"looking for beginning of value":             "a value (a string in double quotes, a number, an object, an array, true, false or null)",
	"looking for beginning of object key string": "a key in double quotes, like \"name\"",
	"after object key":                           "a colon (:) after the key",
	"after object key:value pair":                "a comma (,) or the } that closes the object",
	"after array element":                        "a comma (,) or the ] that closes the array",
	"after top-level value":                      "nothing more: the document is one value, and it has ended",
	"in string literal":                          "text or the closing quote (a line break or other control character in a string is written escaped, like \\n)",
	"in string escape code":                      "an escape after the backslash: \\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\u and four hexadecimal digits",
	"in \\u hexadecimal character escape":        "four hexadecimal digits after \\u",
	"in numeric literal":                         "a digit",
	"after decimal point in numeric literal":     "a digit after the decimal point",
	"in exponent of numeric literal":             "a digit in the exponent",
}

// literalContext is the context of a misspelt true, false or null.
var literalContext = regexp.MustCompile(` in literal (true|false|null) \(expecting '.+'\)$`)

// syntaxProblem describes a syntax error of body in words.
func syntaxProblem(body []byte, se *json.SyntaxError) string {
	msg := se.Error()
	switch {
	case msg == "unexpected end of JSON input":
		return fmt.Sprintf("the document ends early (%s): an object, array or string is not closed; is the file complete?", position(body, se.Offset))
	case msg == "exceeded max depth":
		return fmt.Sprintf("the document nests objects and arrays too deeply (%s)", position(body, se.Offset))
	}
	rest, ok := strings.CutPrefix(msg, "invalid character ")
	if !ok {
		return fmt.Sprintf("the document is not valid JSON (%s)", position(body, se.Offset))
	}
	found := foundWords(body, se.Offset)
	var want string
	for ctx, w := range syntaxExpected {
		if strings.HasSuffix(rest, " "+ctx) {
			want = w
			break
		}
	}
	if m := literalContext.FindStringSubmatch(rest); m != nil {
		want = fmt.Sprintf("the word %s (a bare word must be true, false or null; text goes in double quotes)", m[1])
	}
	if want == "" {
		return fmt.Sprintf("%s is not allowed here (%s)", found, position(body, se.Offset))
	}
	problem := fmt.Sprintf("%s: expected %s, found %s", position(body, se.Offset), want, found)
	if f := byteAt(body, se.Offset); (f == '}' || f == ']') && strings.HasSuffix(rest, "beginning of object key string") || f == ']' && strings.HasSuffix(rest, "beginning of value") {
		problem += " (JSON allows no comma after the last item)"
	}
	return problem
}

// byteAt is the byte the decoder stopped on: the offset-th (offset counts
// the bytes read, that one included), or 0.
func byteAt(body []byte, offset int64) byte {
	if offset < 1 || offset > int64(len(body)) {
		return 0
	}
	return body[offset-1]
}

// foundWords names the character the decoder stopped on.
func foundWords(body []byte, offset int64) string {
	if offset < 1 || offset > int64(len(body)) {
		return "the end of the document"
	}
	start := int(offset - 1)
	for start > 0 && !utf8.RuneStart(body[start]) {
		start--
	}
	r, _ := utf8.DecodeRune(body[start:])
	switch {
	case r == '\n':
		return "a line break"
	case r == '\t':
		return "a tab"
	case r < 0x20 || r == utf8.RuneError:
		return fmt.Sprintf("the control character %U", r)
	default:
		return fmt.Sprintf("%q", r)
	}
}

// position says where the decoder stopped, as an editor counts: "line L,
// column C" (both from 1, columns in characters) of the last byte it read.
func position(body []byte, offset int64) string {
	if offset > int64(len(body)) {
		offset = int64(len(body))
	}
	at := int(offset) - 1
	if at < 0 {
		return "line 1, column 1"
	}
	line, start := 1, 0
	for i := 0; i < at; i++ {
		if body[i] == '\n' {
			line, start = line+1, i+1
		}
	}
	return fmt.Sprintf("line %d, column %d", line, utf8.RuneCount(body[start:at])+1)
}

// valueWords names a JSON value the decoder's UnmarshalTypeError names
// ("number", "number 1.5", "string", "array", "object", "bool").
func valueWords(v string) string {
	switch v {
	case "bool":
		return "true or false"
	case "array", "object":
		return "an " + v
	case "string", "number":
		return "a " + v
	}
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return "the number " + n
	}
	return v
}

// kindWords names the kind of JSON value a Go type is decoded from.
func kindWords(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[time.Time]() {
		return "a time as a string (RFC 3339, like \"2026-01-02T15:04:05Z\")"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a value"
}
