package openai_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// getStreaming sends the request openai-go (v3.105.0) makes for
// client.Responses.GetStreaming(ctx, id, params): a GET whose query holds
// the params (starting_after) and whose JSON body holds stream: true
// (option.WithJSONSet("stream", true)), with its Accept and Content-Type.
// It returns the events' types and sequence numbers. (openai-go itself is
// not a dependency: its one package takes minutes and gigabytes to
// compile, for this one request.)
func getStreaming(t *testing.T, f *testServer, id, query string) (types []string, seqs []int) {
	t.Helper()
	req, err := http.NewRequest("GET", f.URL+"/v1/responses/"+id+query, strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Stainless-Retry-Count", "0")
	req.Header.Set("Authorization", "Bearer unused")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("GetStreaming's request: %d %s, want the event stream", resp.StatusCode, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type           string
			SequenceNumber int `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		types, seqs = append(types, ev.Type), append(seqs, ev.SequenceNumber)
	}
	return types, seqs
}

// TestGetStreamingWithStreamInTheBody: openai-go's Responses.GetStreaming
// sends stream: true in the JSON body of its GET, not in the query;
// agentik streams the stored response's events for it, after
// starting_after too. A body that contradicts the query is refused.
func TestGetStreamingWithStreamInTheBody(t *testing.T) {
	f := newTestServer(t, strict())
	resp, b := f.do(t, "POST", "/v1/responses", `{"model":"fake","input":"stream me again"}`, "Content-Type", "application/json")
	var created struct{ ID, Status string }
	if err := json.Unmarshal(b, &created); resp.StatusCode != 200 || err != nil || created.Status != "completed" {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	types, seqs := getStreaming(t, f, created.ID, "")
	if len(types) < 3 || types[0] != "response.created" || types[len(types)-1] != "response.completed" {
		t.Fatalf("GetStreaming gave %v", types)
	}
	rest, restSeqs := getStreaming(t, f, created.ID, "?starting_after="+strconv.Itoa(seqs[1]))
	if len(rest) != len(types)-2 || restSeqs[0] != seqs[2] {
		t.Fatalf("GetStreaming after %d gave %v %v, want the events after it of %v", seqs[1], rest, restSeqs, types)
	}
	resp, b = f.do(t, "GET", "/v1/responses/"+created.ID+"?stream=false", `{"stream":true}`, "Content-Type", "application/json")
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"param":"stream"`) {
		t.Errorf("stream=false in the query, true in the body: %d %s, want 400 naming stream", resp.StatusCode, b)
	}
	resp, b = f.do(t, "GET", "/v1/responses/"+created.ID, `{"stream":"yes"}`, "Content-Type", "application/json")
	if resp.StatusCode != 400 || !strings.Contains(string(b), "invalid_request_error") {
		t.Errorf("a body stream that is not a boolean: %d %s, want 400", resp.StatusCode, b)
	}
}
