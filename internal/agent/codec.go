package agent

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The wire types (Content, Message, Event, AgentEvent, AllEvent,
// Conversation) carry exactly their type's fields on the wire. Each field
// says which in one `wire` tag, so adding a field is one edit:
//
//	Reasoning string `wire:"reasoning,assistant_message?"`
//
// names the JSON key, then the types (the value of the struct's "type"
// field) that carry it; `*` means every type (and a struct without a type
// field); a trailing `?` omits an empty value. Fields are written in the
// order they are declared. A field tagged `wire:"-raw"` keeps the JSON of a
// type this version does not know, which is written back unchanged; one
// tagged `wire:"-"` is never written nor read. Dates
// (time.Time) use TimeFormat; a nil slice that is not omitted is written as
// [].

// wireField is one tagged field of a wire type.
type wireField struct {
	key   string
	index int
	kind  reflect.Kind
	time  bool
	all   bool            // every type carries it
	omit  bool            // with all: omitted when empty
	types map[string]bool // type → omitted when empty
	dup   bool            // another field has the same key
	wide  int             // its key's field in the codec's wide struct
	raw   bool            // that field is a json.RawMessage, decoded once the type is known
	str   bool            // a string encoding/json writes as a plain string (no marshaler)
	inner bool            // a *Event or *AgentEvent (their MarshalJSON is encodeWire)
}

// wireCodec encodes and decodes one wire type.
type wireCodec struct {
	fields  []wireField
	typeIdx int // the "type" field, or -1
	rawIdx  int // the raw field, or -1
	known   map[string]bool
	// wide is a struct with one field per JSON key, which decodes a
	// document in one pass: what the hand-written decoders did.
	wide    reflect.Type
	wideTyp int // the "type" key's field in wide, or -1
	// plans holds, for each type this version knows, the fields its
	// values carry, in order, so encoding one looks its type up once
	// instead of once per field; unknown holds those of any other type.
	plans   map[string][]planField
	unknown []planField
}

// planField is a field a type carries, and whether it is omitted when
// empty.
type planField struct {
	f    *wireField
	omit bool
}

var (
	codecMu sync.Mutex
	codecs  sync.Map // reflect.Type → *wireCodec; built under codecMu
)

var timeType = reflect.TypeOf(time.Time{})

// codecOf returns the codec of struct type t, built once from its tags.
func codecOf(t reflect.Type) *wireCodec {
	if c, ok := codecs.Load(t); ok {
		return c.(*wireCodec)
	}
	codecMu.Lock()
	defer codecMu.Unlock()
	if c, ok := codecs.Load(t); ok {
		return c.(*wireCodec)
	}
	c := &wireCodec{typeIdx: -1, rawIdx: -1, known: map[string]bool{}}
	keys := map[string]int{}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("wire")
		if !ok {
			continue
		}
		if tag == "-raw" {
			c.rawIdx = i
			continue
		}
		if tag == "-" { // kept in memory, never on the wire
			continue
		}
		parts := strings.Split(tag, ",")
		f := wireField{key: parts[0], index: i, kind: sf.Type.Kind(), time: sf.Type == timeType, types: map[string]bool{}}
		f.str = f.kind == reflect.String && !marshals(sf.Type)
		f.inner = sf.Type == reflect.TypeFor[*Event]() || sf.Type == reflect.TypeFor[*AgentEvent]()
		for _, p := range parts[1:] {
			omit := strings.HasSuffix(p, "?")
			p = strings.TrimSuffix(p, "?")
			if p == "*" {
				f.all, f.omit = true, omit
				continue
			}
			f.types[p] = omit
			c.known[p] = true
		}
		if f.key == "type" && f.all && sf.Type.Kind() == reflect.String {
			c.typeIdx = i
		}
		keys[f.key]++
		c.fields = append(c.fields, f)
	}
	var wide []reflect.StructField
	wideIdx := map[string]int{}
	c.wideTyp = -1
	for i := range c.fields {
		f := &c.fields[i]
		f.dup = keys[f.key] > 1
		required := false
		for _, omit := range f.types {
			required = required || !omit
		}
		f.raw = f.dup || (f.kind == reflect.Pointer && (required || (f.all && !f.omit)))
		if j, ok := wideIdx[f.key]; ok {
			f.wide = j
			continue
		}
		typ := t.Field(f.index).Type
		switch {
		case f.raw:
			typ = reflect.TypeOf(json.RawMessage(nil))
		case f.time:
			typ = reflect.TypeOf("")
		}
		f.wide = len(wide)
		wideIdx[f.key] = f.wide
		if f.index == c.typeIdx {
			c.wideTyp = f.wide
		}
		wide = append(wide, reflect.StructField{Name: fmt.Sprintf("F%d", f.wide), Type: typ, Tag: reflect.StructTag(`json:"` + f.key + `"`)})
	}
	c.wide = reflect.StructOf(wide)
	c.plans = map[string][]planField{}
	for typ := range c.known {
		c.plans[typ] = c.plan(typ, true)
	}
	if c.typeIdx < 0 {
		c.plans[""] = c.plan("", true)
	}
	c.unknown = c.plan("", false)
	codecs.Store(t, c)
	return c
}

// plan lists the fields a value of type typ carries (see carried).
func (c *wireCodec) plan(typ string, known bool) []planField {
	var p []planField
	for i := range c.fields {
		f := &c.fields[i]
		if carried, omit := f.carried(typ, known); carried {
			p = append(p, planField{f, omit})
		}
	}
	return p
}

// planOf returns the fields v carries, and whether its type is one this
// version knows.
func (c *wireCodec) planOf(v reflect.Value) ([]planField, bool) {
	typ := ""
	if c.typeIdx >= 0 {
		typ = v.Field(c.typeIdx).String()
	}
	if p, ok := c.plans[typ]; ok {
		return p, true
	}
	return c.unknown, false
}

// carried reports whether a value of type typ carries f, and whether f is
// then omitted when empty.
func (f *wireField) carried(typ string, known bool) (carried, omit bool) {
	if f.all {
		return true, f.omit
	}
	if !known {
		return false, false
	}
	omit, ok := f.types[typ]
	return ok, omit
}

// isKnown reports whether v's type is one this version knows.
func (c *wireCodec) isKnown(v reflect.Value) bool {
	_, known := c.typeOf(v)
	return known
}

// known reports whether v's type is one this version knows (always true
// for a type without a type field).
func (c *wireCodec) typeOf(v reflect.Value) (string, bool) {
	if c.typeIdx < 0 {
		return "", true
	}
	typ := v.Field(c.typeIdx).String()
	return typ, c.known[typ]
}

// encodeWire writes v (a wire struct) as JSON.
func encodeWire(v any) ([]byte, error) { return encodeValue(reflect.ValueOf(v)) }

// encodeValue is encodeWire of a reflect.Value, which need not be boxed.
func encodeValue(rv reflect.Value) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(256) // a streamed token's event is ~210 bytes: no second allocation
	if err := appendWire(&buf, rv); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// appendWire writes rv (a wire struct) as JSON to buf; an inner event of
// a type this version knows is written into the same buffer.
func appendWire(buf *bytes.Buffer, rv reflect.Value) error {
	c := codecOf(rv.Type())
	plan, known := c.planOf(rv)
	if !known && c.rawIdx >= 0 {
		if raw := rv.Field(c.rawIdx).Bytes(); len(raw) > 0 {
			buf.Write(raw)
			return nil
		}
	}
	buf.WriteByte('{')
	first := true
	for _, pf := range plan {
		f, omit := pf.f, pf.omit
		fv := rv.Field(f.index)
		if omit && isEmpty(fv) {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.WriteByte('"')
		buf.WriteString(f.key)
		buf.WriteString(`":`)
		switch {
		case f.time:
			buf.WriteByte('"')
			buf.Write(appendTime(buf.AvailableBuffer(), timeOf(fv)))
			buf.WriteByte('"')
		case f.kind == reflect.Slice && fv.IsNil():
			buf.WriteString("[]")
		case f.kind == reflect.Int || f.kind == reflect.Int64:
			buf.Write(strconv.AppendInt(buf.AvailableBuffer(), fv.Int(), 10))
		case f.kind == reflect.Bool:
			buf.WriteString(strconv.FormatBool(fv.Bool()))
		case f.inner && !fv.IsNil() && codecOf(fv.Type().Elem()).isKnown(fv.Elem()):
			// The inner event of an AllEvent, of a type this version
			// knows: its codec's output as json.Marshal would write it
			// (see Encode), without json.Marshal's pass over it.
			if err := appendWire(buf, fv.Elem()); err != nil {
				return fmt.Errorf("%s: %w", f.key, err)
			}
		case f.str && plainString(fv.String()):
			buf.WriteByte('"')
			buf.WriteString(fv.String())
			buf.WriteByte('"')
		default:
			b, err := json.Marshal(fv.Interface())
			if err != nil {
				return fmt.Errorf("%s: %w", f.key, err)
			}
			buf.Write(b)
		}
	}
	buf.WriteByte('}')
	return nil
}

// timeOf is the time.Time in fv, read through its address when it has
// one (no copy boxed in an interface).
func timeOf(fv reflect.Value) time.Time {
	if fv.CanAddr() {
		return *fv.Addr().Interface().(*time.Time)
	}
	return fv.Interface().(time.Time)
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// marshals reports whether encoding/json writes t through a method of its
// own rather than by its kind.
func marshals(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) || p.Implements(jsonMarshaler) || p.Implements(textMarshaler)
}

// plainString reports whether encoding/json (json.Marshal, which escapes
// HTML) writes s as itself between quotes: printable ASCII without a quote,
// a backslash, '<', '>' or '&'. Ids, types and most streamed text are;
// anything else goes through json.Marshal, so the bytes never differ.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String, reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return v.IsZero()
}

// decodeWire reads JSON b into v (a pointer to a wire struct), which it
// zeroes first. A key shared by several fields goes to the one the type
// carries; other keys are read whatever the type. A required pointer field
// its type carries must be present (null gives its zero value, never nil).
// An unknown type keeps b in the raw field.
func decodeWire(b []byte, v any) error {
	if string(b) == "null" {
		return nil // as encoding/json does
	}
	rv := reflect.ValueOf(v).Elem()
	c := codecOf(rv.Type())
	w := reflect.New(c.wide).Elem()
	if err := json.Unmarshal(b, w.Addr().Interface()); err != nil {
		return err
	}
	rv.SetZero()
	typ, known := "", true
	if c.typeIdx >= 0 {
		typ = w.Field(c.wideTyp).String()
		known = c.known[typ]
	}
	for i := range c.fields {
		f := &c.fields[i]
		carried, omit := f.carried(typ, known)
		if f.dup && !carried {
			continue
		}
		fv, wf := rv.Field(f.index), w.Field(f.wide)
		switch {
		case f.raw:
			raw := wf.Bytes()
			required := carried && !omit && f.kind == reflect.Pointer
			if raw == nil {
				if required {
					return fmt.Errorf("%s %s: %s is missing", rv.Type().Name(), typ, f.key)
				}
				continue
			}
			if required && string(raw) == "null" {
				fv.Set(reflect.New(fv.Type().Elem())) // never a nil inner value
				continue
			}
			if err := json.Unmarshal(raw, fv.Addr().Interface()); err != nil {
				return fmt.Errorf("%s %s: %s: %w", rv.Type().Name(), typ, f.key, err)
			}
		case f.time:
			if s := wf.String(); s != "" {
				t, err := time.Parse(time.RFC3339Nano, s)
				if err != nil {
					return fmt.Errorf("%s: %w", f.key, err)
				}
				fv.Set(reflect.ValueOf(t.UTC()))
			}
		default:
			fv.Set(wf)
		}
	}
	if !known && c.rawIdx >= 0 {
		rv.Field(c.rawIdx).SetBytes(append([]byte(nil), b...))
	}
	return nil
}
