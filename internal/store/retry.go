package store

import "time"

// RetryBackoff is the default wait before the writer's first retry of a
// transaction that failed with a transient error (eventlog.Transient); it
// doubles on each further retry, eventlog.RetryAttempts attempts in all.
const RetryBackoff = 50 * time.Millisecond
