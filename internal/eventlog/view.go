package eventlog

import "unsafe"

// viewString is b as a string without a copy: b must never change. With
// the driver's calls into SQLite (sqlitedrv/statement.go) and the store's
// two views (internal/store/view.go), the only use of unsafe in the engine
// (internal/arch's TestUnsafeOnlyInTheDriver; docs/store.md).
func viewString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
