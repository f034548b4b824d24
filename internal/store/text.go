package store

import (
	"encoding/json"
	"reflect"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// Text columns take valid UTF-8 without NUL bytes: PostgreSQL refuses
// anything else with an error, SQLite would store it. Checking here, once,
// makes both databases answer alike: a write with such text is
// bad_request, a lookup of such an id is not_found (it cannot exist).

// textOK reports whether s can be stored in a text column.
func textOK(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// checkText fails with bad_request naming the field when v is not textOK.
func checkText(field, v string) error {
	if textOK(v) {
		return nil
	}
	return agent.Errorf(agent.CodeBadRequest, "%s %q must be valid UTF-8 without NUL bytes", field, v)
}

// missing is the not_found of a lookup by an id that cannot be stored.
func missing(what, id string) error {
	return agent.Errorf(agent.CodeNotFound, "%s %q not found", what, shortID(id))
}

// checkRecordText checks the text columns a record writes.
func checkRecordText(rec *agent.Record) error {
	ev := &rec.Event
	fields := []struct{ name, v string }{{"event id", ev.ID}, {"conversation_id", ev.ConversationID}}
	if a := ev.Agent; a != nil {
		fields = append(fields, struct{ name, v string }{"conversation_id", a.ConversationID}, struct{ name, v string }{"title", a.Title})
	}
	if c := rec.Conversation; c != nil {
		fields = append(fields, struct{ name, v string }{"conversation id", c.ID}, struct{ name, v string }{"title", c.Title})
	}
	if e := ev.Event; e != nil && e.Message != nil {
		m := e.Message
		fields = append(fields, struct{ name, v string }{"message id", m.ID}, struct{ name, v string }{"client_id", m.ClientID})
	}
	for _, f := range fields {
		if err := checkText(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// shortID is id as an error message names it: cut to 64 bytes (at a rune
// boundary), so an absurd id from a request is not echoed whole.
func shortID(id string) string {
	if len(id) <= 64 {
		return id
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + "…"
}

// nulMark opens a text column's value that holds U+0000, JSON-quoted after
// the mark: PostgreSQL's text type refuses NUL bytes, SQLite keeps them,
// and both must keep what a user or a model wrote. (U+FFFF is a
// noncharacter: no text to keep starts with it, and one that does is
// quoted too.) Payload columns need none of this: JSON escapes NUL.
const nulMark = "\uffff"

// columnText is s as a text column keeps it (see nulMark).
func columnText(s string) string {
	if strings.IndexByte(s, 0) < 0 && !strings.HasPrefix(s, nulMark) {
		return s
	}
	b, _ := json.Marshal(s)
	return nulMark + string(b)
}

// fromColumn is what columnText kept.
func fromColumn(s string) string {
	if rest, ok := strings.CutPrefix(s, nulMark); ok {
		var v string
		if json.Unmarshal([]byte(rest), &v) == nil {
			return v
		}
	}
	return s
}

// checkTextOnWrite makes every gorm create and update on db check its
// text columns first (a row's string fields, an update's map): a value
// that is not textOK fails the write with bad_request naming the column
// (a schedule's prompt, a user's name, an agent's payload…), on both
// databases, instead of PostgreSQL's error, which was a 500. The writer's
// own SQL (messages, events) keeps NUL bytes through columnText.
func checkTextOnWrite(db *gorm.DB) error {
	check := func(tx *gorm.DB) {
		st := tx.Statement
		if tx.Error != nil {
			return
		}
		if m, ok := st.Dest.(map[string]any); ok {
			for k, v := range m {
				if sv, ok := v.(string); ok && !textOK(sv) {
					_ = tx.AddError(checkText(k, sv))
					return
				}
			}
			return
		}
		if st.Schema == nil || !st.ReflectValue.IsValid() {
			return
		}
		rows := []reflect.Value{st.ReflectValue}
		if k := st.ReflectValue.Kind(); k == reflect.Slice || k == reflect.Array {
			rows = rows[:0]
			for i := range st.ReflectValue.Len() {
				rows = append(rows, reflect.Indirect(st.ReflectValue.Index(i)))
			}
		}
		for _, row := range rows {
			if row.Kind() != reflect.Struct {
				continue
			}
			for _, f := range st.Schema.Fields {
				if f.FieldType.Kind() != reflect.String || f.DBName == "" {
					continue
				}
				v, _ := f.ValueOf(st.Context, row)
				if sv, ok := v.(string); ok && !textOK(sv) {
					_ = tx.AddError(checkText(f.DBName, sv))
					return
				}
			}
		}
	}
	if err := db.Callback().Create().Before("gorm:create").Register("agentik:text", check); err != nil {
		return err
	}
	return db.Callback().Update().Before("gorm:update").Register("agentik:text", check)
}
