package agent

import "time"

// TimeFormat is how every date crosses the wire: RFC 3339, milliseconds, UTC.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// FormatTime renders t in the wire format.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// appendTime appends t to b as FormatTime writes it.
func appendTime(b []byte, t time.Time) []byte { return t.UTC().AppendFormat(b, TimeFormat) }

// Clock returns the current time; injected so tests control it.
type Clock func() time.Time
