package store

import "unsafe"

// The store's two conversions without a copy, of an event's JSON between
// the string a driver made of a row and the bytes of agent.Encoded, whose
// JSON nothing writes to. With the driver's calls into SQLite
// (internal/eventlog/sqlitedrv/statement.go) and the engine's own view
// (internal/eventlog/view.go), the only uses of unsafe in the store and its
// engine (internal/arch's TestUnsafeOnlyInTheDriver; docs/store.md).

// viewString is b as a string without a copy: b must never change.
func viewString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// viewBytes is s as bytes without a copy: they must never be written.
func viewBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
