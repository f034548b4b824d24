package agent

import (
	"errors"
	"fmt"
	"strings"
)

// Error codes: the only values of Error.Code on the wire.
const (
	CodeBadRequest           = "bad_request"
	CodeNotFound             = "not_found"
	CodeBusy                 = "busy"
	CodeConflict             = "conflict" // the thing changed state first (a queued send already started)
	CodeUnauthorized         = "unauthorized"
	CodeForbidden            = "forbidden"
	CodeTooLarge             = "too_large"
	CodeRateLimited          = "rate_limited"
	CodeUnavailable          = "unavailable"
	CodeModelError           = "model_error"
	CodeToolError            = "tool_error"
	CodeInterruptedByRestart = "interrupted_by_restart"
	CodeInternal             = "internal"
	// CodeQuotaExceeded: the user's token budget is used up (budget.go).
	CodeQuotaExceeded = "quota_exceeded"
)

// Error is an error with a wire code. Its JSON is the Error body of every
// failed reply: {"code","message"}.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Message
}

// Is makes errors.Is match any *Error with the same code, so the sentinels
// below match errors made with Errorf.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels to compare with errors.Is.
var (
	ErrBadRequest  = &Error{Code: CodeBadRequest}
	ErrNotFound    = &Error{Code: CodeNotFound}
	ErrBusy        = &Error{Code: CodeBusy}
	ErrConflict    = &Error{Code: CodeConflict}
	ErrTooLarge    = &Error{Code: CodeTooLarge}
	ErrUnavailable = &Error{Code: CodeUnavailable}
	ErrModel       = &Error{Code: CodeModelError}
	ErrTool        = &Error{Code: CodeToolError}
)

// ErrStaleMemory is Store.Memory's answer while a conversation's working
// memory does not follow its active path (Record.StaleMemory): the reader
// rebuilds it from the path (Runner.memory) instead.
var ErrStaleMemory = errors.New("working memory does not follow the active path")

// Errorf makes an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorSummary splits an error message into what a person reads (its
// first line: what went wrong, in words, and what to do) and the detail
// after it (upstream text, for whoever debugs it). A one-line message is
// all summary. The model adapter writes its model_error messages so.
func ErrorSummary(msg string) (summary, detail string) {
	summary, detail, _ = strings.Cut(msg, "\n")
	return summary, strings.TrimSpace(detail)
}

// ErrorCode is the wire code of err: its *Error's code, or internal.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// Shorten cuts s to at most n bytes for quoting it in an error message,
// marking the cut with "…".
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// FailureText is a failed turn's error as one line for a protocol that
// has a message only ("code: message"; the message alone without a code):
// an error event's or an error message's Code and Error.
func FailureText(code, msg string) string {
	if code == "" {
		return msg
	}
	return code + ": " + msg
}
