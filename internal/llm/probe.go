package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// ProbeTimeout bounds the start-up probe of a model endpoint.
const ProbeTimeout = 5 * time.Second

// maxListed is how many of an endpoint's models a ProbeError names.
const maxListed = 8

// ProbeError is what Probe found wrong with a model endpoint: the problem
// and how to fix it, with secrets (the API key, a password or query in the
// base URL) redacted, so it can be logged and shown in the UI.
type ProbeError struct {
	Problem string
	Fix     string
}

func (e *ProbeError) Error() string { return e.Problem + "; " + e.Fix }

// Probe asks the endpoint of cfg for its models (GET {BaseURL}/models) at
// start, so that a wrong base URL, key or model name is reported before the
// first send instead of as a bare error then. It returns nil when the
// endpoint answers and lists cfg.Model (or lists nothing to compare with),
// else a *ProbeError: unreachable host, 404 (usually a missing /v1),
// 401/403 (the key), not an OpenAI API, a model it does not list.
func Probe(ctx context.Context, cfg Config) error {
	client := cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	red := newRedactor(cfg.APIKey)
	u, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	if err != nil || u.Host == "" {
		return &ProbeError{Problem: "the model base URL is not a URL", Fix: "set OPENAI_BASE_URL to the API root, e.g. http://127.0.0.1:11434/v1"}
	}
	u.Path = strings.TrimRight(u.Path, "/")
	shown := safeURL(*u)
	u.Path += "/models"
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return &ProbeError{Problem: "the model base URL " + shown + " cannot be requested", Fix: "correct OPENAI_BASE_URL"}
	}
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		var why string
		if ue, ok := err.(*url.Error); ok {
			why = ue.Err.Error() // without the URL, which may hold secrets
		} else {
			why = err.Error()
		}
		return &ProbeError{
			Problem: fmt.Sprintf("the model endpoint %s cannot be reached (%s)", shown, red.apply(why)),
			Fix:     "start the model server, or correct the host and port in OPENAI_BASE_URL",
		}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		fix := "set OPENAI_BASE_URL to the OpenAI-compatible API root of the server (it usually ends in /v1)"
		if !strings.HasSuffix(u.Path, "/v1/models") {
			fix = "OPENAI_BASE_URL probably lacks /v1: try " + strings.TrimSuffix(shown, "/") + "/v1"
		}
		return &ProbeError{Problem: fmt.Sprintf("the model endpoint %s answered 404 Not Found to GET /models", shown), Fix: fix}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		problem := fmt.Sprintf("the model endpoint %s refused the API key (%s)", shown, resp.Status)
		if cfg.APIKey == "" {
			problem = fmt.Sprintf("the model endpoint %s wants an API key (%s)", shown, resp.Status)
		}
		return &ProbeError{Problem: problem, Fix: "set OPENAI_API_KEY to a valid key for this endpoint"}
	case resp.StatusCode != http.StatusOK:
		return &ProbeError{
			Problem: fmt.Sprintf("the model endpoint %s answered %s to GET /models", shown, resp.Status),
			Fix:     "check OPENAI_BASE_URL and the model server's log",
		}
	}
	var body struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&body); err != nil || body.Data == nil {
		return &ProbeError{
			Problem: fmt.Sprintf("the model endpoint %s did not answer GET /models with an OpenAI model list", shown),
			Fix:     "set OPENAI_BASE_URL to the OpenAI-compatible API root (e.g. …/v1), not a web page or another API",
		}
	}
	var names []string
	for _, m := range body.Data {
		names = append(names, m.ID)
	}
	if cfg.Model == "" || len(names) == 0 || listed(names, cfg.Model) {
		return nil
	}
	shownNames := names
	more := ""
	if len(shownNames) > maxListed {
		shownNames, more = shownNames[:maxListed], fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return &ProbeError{
		Problem: fmt.Sprintf("the model %q is not among the models %s lists (%s%s)", cfg.Model, shown, strings.Join(shownNames, ", "), more),
		Fix:     "set OPENAI_MODEL to one of them, or pull or load that model on the server",
	}
}

// listed reports whether an endpoint listing names serves model; Ollama
// also answers "name" for "name:latest".
func listed(names []string, model string) bool {
	return slices.Contains(names, model) || (!strings.Contains(model, ":") && slices.Contains(names, model+":latest"))
}

// safeURL is u for logs and the UI: no user info (a user name may be a
// key too), no query values.
func safeURL(u url.URL) string {
	if u.User != nil {
		u.User = url.User("redacted")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"redacted"}
		}
		u.RawQuery = q.Encode()
	}
	u.Fragment = ""
	return u.String()
}
