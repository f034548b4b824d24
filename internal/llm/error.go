package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentik/agentik/internal/agent"
)

// errStreamCut is a stream that ended before any choice finished.
var errStreamCut = errors.New("stream cut")

// maxUpstreamMessage caps how much of an upstream error body reaches an
// error message (proxies answer with whole HTML pages).
const maxUpstreamMessage = 500

// modelError turns a failed attempt into a model_error whose message says
// what went wrong upstream, with secrets redacted. callCtx is the context
// of the whole call, to tell its timeout apart.
//
// The message is two lines (agent.ErrorSummary): first what went wrong in
// words and what to do (failureSummary), then the upstream detail.
func (m *Model) modelError(callCtx context.Context, err error) *agent.Error {
	var msg string
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	timedOut := false
	switch {
	case errors.Is(context.Cause(callCtx), errCallTimeout):
		msg, timedOut = fmt.Sprintf("no complete answer within %s", m.timeout), true
	case errors.Is(err, errIdleTimeout):
		msg, timedOut = fmt.Sprintf("no data from %s for %s", m.model, m.idle), true
	case errors.Is(err, errStreamCut):
		msg = "the stream ended before the answer was complete"
	case errors.As(err, &apiErr):
		msg = apiErr.Message
		if apiErr.HTTPStatusCode > 0 {
			msg = statusText(apiErr.HTTPStatusCode) + ": " + apiErr.Message
		}
	case errors.As(err, &reqErr):
		body := strings.TrimSpace(string(reqErr.Body))
		if body == "" && reqErr.Err != nil {
			body = reqErr.Err.Error()
		}
		msg = statusText(reqErr.HTTPStatusCode)
		if body != "" {
			msg += ": " + body
		}
	default:
		msg = err.Error()
	}
	if len(msg) > maxUpstreamMessage {
		msg = msg[:maxUpstreamMessage] + "…"
	}
	return agent.Errorf(agent.CodeModelError, "%s\nmodel: %s", failureSummary(err, timedOut), m.redact.apply(msg))
}

// failureSummary says in words what went wrong with a model call and what
// to do: the one place where upstream failures become the sentences a
// person reads (the UI shows it, with the detail one click away).
func failureSummary(err error, timedOut bool) string {
	switch code := httpStatus(err); {
	case timedOut:
		return "The model did not answer in time. Retry; if it keeps happening, the model server may be overloaded."
	case errors.Is(err, errStreamCut), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "The model's answer broke off. Retry."
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return "The model endpoint refused the API key. Check OPENAI_API_KEY."
	case code == http.StatusNotFound:
		return "The model endpoint does not know this model or address. Check OPENAI_MODEL and OPENAI_BASE_URL."
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable || code == 529:
		return "The model is overloaded or rate-limited. Wait a moment and retry."
	case code >= 500:
		return "The model endpoint failed on its side. Retry in a moment."
	case code >= 400:
		return "The model endpoint refused the request."
	case code == 0 && isNetwork(err):
		return "The model endpoint is unreachable. Check OPENAI_BASE_URL and that the model server is running."
	}
	return "The model call failed."
}

// isNetwork reports a failure to reach the endpoint at all.
func isNetwork(err error) bool {
	var netErr net.Error
	var urlErr *url.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &netErr) || errors.As(err, &urlErr)
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

// retryable reports whether a failure before the first delta is worth
// another attempt: rate limits, server errors, broken or refused
// connections and silent servers.
func retryable(err error) bool {
	if code := httpStatus(err); code != 0 {
		return code == http.StatusTooManyRequests || code >= 500
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var netErr net.Error
	var urlErr *url.Error
	return errors.Is(err, errStreamCut) || errors.Is(err, errIdleTimeout) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &netErr) || errors.As(err, &urlErr)
}

// httpStatus is the HTTP status of a go-openai error, or 0.
func httpStatus(err error) int {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode
	}
	return 0
}

// wait is how long to sleep after failed attempt n (1-based), given the
// response's Retry-After and the budget left; ok is false when the wait
// does not fit the budget.
func (p retryPolicy) wait(n int, retryAfter string, left time.Duration) (time.Duration, bool) {
	if d, ok := parseRetryAfter(retryAfter, time.Now()); ok {
		return d, d <= left
	}
	d := p.base << (n - 1)
	d = d/2 + rand.N(d/2+1) // jitter in [d/2, d]
	return d, d <= left
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// redactor removes secrets from upstream messages: the configured API key
// and anything shaped like an OpenAI key, a bearer token or a key in a URL.
type redactor struct{ key string }

var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`sk-[A-Za-z0-9_\-]{4,}`),
	regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._~+/=\-]+`),
	regexp.MustCompile(`(?i)((?:api[_-]?key|access_token|token)=)[^&\s"']+`),
}

func newRedactor(key string) redactor { return redactor{key: key} }

const redacted = "[redacted]"

func (r redactor) apply(s string) string {
	if len(r.key) >= 4 {
		s = strings.ReplaceAll(s, r.key, redacted)
	}
	s = secretPatterns[0].ReplaceAllString(s, redacted)
	s = secretPatterns[1].ReplaceAllString(s, "Bearer "+redacted)
	s = secretPatterns[2].ReplaceAllString(s, "${1}"+redacted)
	return s
}
