package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	_ "github.com/glebarez/go-sqlite" // the "sqlite" database/sql driver, to change the database behind the server

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// team is the real binary with AGENTIK_API_KEYS (the admin's key) and two
// members, ann and bob, each with a key of their own.
type team struct {
	p        *proc
	env      []string // the binary's environment, to start it again
	fake     *llmtest.Server
	admin    string // AGENTIK_API_KEYS
	ann, bob member
}

type member struct {
	id, key string
}

const adminKey = "admin-secret-key"

// call sends a request with key and returns the status and body.
func call(t testing.TB, key, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// must is call that wants a 2xx and decodes the body into out.
func must(t testing.TB, key, method, url, body string, out any) {
	t.Helper()
	code, b := call(t, key, method, url, body)
	if code/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, url, code, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, b)
		}
	}
}

func startTeam(t *testing.T, db string, env ...string) *team {
	t.Helper()
	fake, fakeURL := llmtest.NewHTTPServer(t)
	env = append([]string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS=" + adminKey}, env...)
	tm := &team{p: start(t, freeAddr(t), db, env...), env: env, fake: fake, admin: adminKey}
	for _, m := range []*member{&tm.ann, &tm.bob} {
		name := "ann"
		if m == &tm.bob {
			name = "bob"
		}
		var u struct{ ID string }
		must(t, adminKey, "POST", tm.p.url("/agentik/users"), `{"name":"`+name+`","email":"`+name+`@example.com"}`, &u)
		var k struct{ Key string }
		must(t, adminKey, "POST", tm.p.url("/agentik/users/"+u.ID+"/keys"), `{"name":"laptop"}`, &k)
		m.id, m.key = u.ID, k.Key
	}
	return tm
}

// converse makes a conversation as key and runs one turn through /send.
func (tm *team) converse(t *testing.T, key, text string) string {
	t.Helper()
	var c struct{ ID string }
	must(t, key, "POST", tm.p.url("/agentik/conversations"), `{}`, &c)
	must(t, key, "POST", tm.p.url("/agentik/conversations/"+c.ID+"/send"), `{"content":[{"type":"text","body":"`+text+`"}]}`, nil)
	return c.ID
}

// sseEvent is one event of an SSE stream.
type sseEvent struct {
	id   string
	data string
}

// sse opens an SSE stream as key; events arrive on the channel, which
// closes when the stream ends.
func sse(t *testing.T, ctx context.Context, key, url, lastID string) <-chan sseEvent {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	ch := make(chan sseEvent, 1024)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			case line == "":
				if ev.data != "" {
					ch <- ev
				}
				ev = sseEvent{}
			}
		}
	}()
	return ch
}

// waitEnd reads a conversation's SSE stream (url: …/conversations/{id}/events)
// from its start, as key, until its first turn's end event.
func waitEnd(t *testing.T, key, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ev := range sse(t, ctx, key, url, "0") {
		if strings.HasPrefix(ev.data, `{"type":"end"`) {
			return
		}
	}
	t.Fatalf("%s ended without an end event (or 30 s passed)", url)
}

// allEvent is what the all stream carries, as far as these tests read it.
type allEvent struct {
	Seq            int64  `json:"seq"`
	Type           string `json:"type"`
	ConversationID string `json:"conversation_id"`
	Event          struct {
		Type           string `json:"type"`
		ConversationID string `json:"conversation_id"`
	} `json:"event"`
}

func (e allEvent) conv() string {
	if e.ConversationID != "" {
		return e.ConversationID
	}
	return e.Event.ConversationID
}

func decodeAll(t *testing.T, data string) allEvent {
	t.Helper()
	var e allEvent
	if err := json.Unmarshal([]byte(data), &e); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	return e
}

// wsConn is a WebSocket as key.
type wsClient struct {
	t *testing.T
	c *websocket.Conn
	n int
}

func dialWS(t *testing.T, ctx context.Context, p *proc, key string) *wsClient {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/agentik/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 24)
	t.Cleanup(func() { c.CloseNow() })
	return &wsClient{t: t, c: c}
}

type wsFrame struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code string `json:"code"`
	} `json:"error"`
	Event json.RawMessage `json:"event"`
}

// do sends a command and returns its reply, keeping the events read
// meanwhile in events.
func (w *wsClient) do(ctx context.Context, cmd string, events *[]allEvent) wsFrame {
	w.t.Helper()
	w.n++
	id := fmt.Sprint(w.n)
	if err := w.c.Write(ctx, websocket.MessageText, []byte(strings.Replace(cmd, "{", `{"id":"`+id+`",`, 1))); err != nil {
		w.t.Fatal(err)
	}
	for {
		f := w.read(ctx)
		if f.Type == "event" && events != nil {
			var e allEvent
			_ = json.Unmarshal(f.Event, &e)
			*events = append(*events, e)
		}
		if f.Type == "reply" && f.ID == id {
			return f
		}
	}
}

func (w *wsClient) read(ctx context.Context) wsFrame {
	w.t.Helper()
	_, b, err := w.c.Read(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	var f wsFrame
	if err := json.Unmarshal(b, &f); err != nil {
		w.t.Fatalf("%v: %s", err, b)
	}
	return f
}

// TestMembersSeeOnlyTheirOwn: two members and an admin against the real
// binary, over REST, SSE, WebSocket, search, export and replay, on SQLite
// and PostgreSQL.
func TestMembersSeeOnlyTheirOwn(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "agentik.db")
			if backend == "postgres" {
				db = freshSchema(t)
			}
			tm := startTeam(t, db)
			membersSeeOnlyTheirOwn(t, tm)
		})
	}
}

func membersSeeOnlyTheirOwn(t *testing.T, tm *team) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u := tm.p.url
	annC := tm.converse(t, tm.ann.key, "apples for ann")
	bobC := tm.converse(t, tm.bob.key, "apples for bob")
	adminC := tm.converse(t, tm.admin, "apples for the admin")

	// The list, one's own conversation and another's.
	var list struct {
		Conversations []struct{ ID string }
		Total         int
	}
	must(t, tm.ann.key, "GET", u("/agentik/conversations"), "", &list)
	if list.Total != 1 || len(list.Conversations) != 1 || list.Conversations[0].ID != annC {
		t.Errorf("ann lists %+v, want only %s", list, annC)
	}
	must(t, tm.admin, "GET", u("/agentik/conversations"), "", &list)
	if list.Total != 3 {
		t.Errorf("the admin lists %d, want 3", list.Total)
	}
	_, unknown := call(t, tm.ann.key, "GET", u("/agentik/conversations/no-such-id"), "")
	for _, path := range []string{"", "/messages", "/export", "/queue", "/events/replay"} {
		code, b := call(t, tm.ann.key, "GET", u("/agentik/conversations/"+bobC+path), "")
		if code != 404 {
			t.Errorf("ann GET bob's %s: %d %s, want 404", path, code, b)
		}
		if path == "" && strings.ReplaceAll(string(b), bobC, "no-such-id") != string(unknown) {
			t.Errorf("bob's conversation answers %s, an unknown one %s: they must not differ", b, unknown)
		}
		if code, _ := call(t, tm.bob.key, "GET", u("/agentik/conversations/"+bobC+path), ""); code != 200 {
			t.Errorf("bob GET his own %s: %d", path, code)
		}
	}
	for _, req := range [][2]string{
		{"POST", "/send"}, {"POST", "/rename"}, {"POST", "/interrupt"}, {"POST", "/compact"}, {"DELETE", ""}, {"PATCH", ""},
	} {
		body := `{"content":[{"type":"text","body":"x"}],"title":"x"}`
		if code, b := call(t, tm.ann.key, req[0], u("/agentik/conversations/"+bobC+req[1]), body); code != 404 {
			t.Errorf("ann %s bob's %s: %d %s, want 404", req[0], req[1], code, b)
		}
	}
	// An SSE stream of another's conversation is refused before it starts.
	if code, _ := call(t, tm.ann.key, "GET", u("/agentik/conversations/"+bobC+"/events"), ""); code != 404 {
		t.Errorf("ann's SSE of bob's conversation: %d, want 404", code)
	}

	// Search and export.
	var found struct {
		Results []struct {
			ConversationID string `json:"conversation_id"`
		}
	}
	must(t, tm.ann.key, "GET", u("/agentik/search?q=apples"), "", &found)
	if len(found.Results) != 1 || found.Results[0].ConversationID != annC {
		t.Errorf("ann's search: %+v, want only %s", found, annC)
	}
	must(t, tm.admin, "GET", u("/agentik/search?q=apples"), "", &found)
	if len(found.Results) != 3 {
		t.Errorf("the admin's search: %d results, want 3", len(found.Results))
	}
	_, exp := call(t, tm.ann.key, "GET", u("/agentik/export"), "")
	if !strings.Contains(string(exp), annC) || strings.Contains(string(exp), bobC) || strings.Contains(string(exp), adminC) {
		t.Errorf("ann's export holds another's conversation: %.300s", exp)
	}
	_, exp = call(t, tm.admin, "GET", u("/agentik/export"), "")
	if !strings.Contains(string(exp), annC) || !strings.Contains(string(exp), bobC) {
		t.Errorf("the admin's export lacks a member's conversation")
	}
	// Replay of the whole log.
	var replay struct{ Events []allEvent }
	must(t, tm.ann.key, "GET", u("/agentik/events/replay?limit=1000"), "", &replay)
	if len(replay.Events) == 0 {
		t.Error("ann's replay is empty")
	}
	for _, e := range replay.Events {
		if e.conv() != annC {
			t.Errorf("ann's replay holds an event of %s", e.conv())
		}
	}

	// Admin routes.
	for _, path := range []string{"/agentik/users", "/metrics"} {
		if code, _ := call(t, tm.ann.key, "GET", u(path), ""); code != 403 {
			t.Errorf("ann GET %s: %d, want 403", path, code)
		}
	}
	if code, _ := call(t, tm.ann.key, "PATCH", u("/agentik/users/"+tm.bob.id), `{"disabled":true}`); code != 403 {
		t.Errorf("ann disabling bob: %d, want 403", code)
	}
	var me struct{ ID, Name, Role string }
	must(t, tm.ann.key, "GET", u("/agentik/me"), "", &me)
	if me.ID != tm.ann.id || me.Name != "ann" || me.Role != "member" {
		t.Errorf("ann's /me: %+v", me)
	}

	// WebSocket: every op on another's conversation is not_found, the list
	// and the all stream hold one's own.
	ws := dialWS(t, ctx, tm.p, tm.ann.key)
	var evs []allEvent
	f := ws.do(ctx, `{"op":"subscribe","stream":"all","after":0}`, &evs)
	if !f.OK {
		t.Fatalf("subscribe: %s", f.Result)
	}
	for _, op := range []string{"get_conversation", "get_messages", "rename", "delete", "interrupt", "compact", "update_conversation"} {
		f := ws.do(ctx, `{"op":"`+op+`","conversation_id":"`+bobC+`","title":"x"}`, &evs)
		if f.Error == nil || f.Error.Code != "not_found" {
			t.Errorf("ws %s of bob's: %+v, want not_found", op, f)
		}
	}
	f = ws.do(ctx, `{"op":"subscribe","stream":"conversation","conversation_id":"`+bobC+`","after":0}`, &evs)
	if f.Error == nil || f.Error.Code != "not_found" {
		t.Errorf("ws subscribe to bob's conversation: %+v, want not_found", f)
	}
	f = ws.do(ctx, `{"op":"list_conversations"}`, &evs)
	if !strings.Contains(string(f.Result), annC) || strings.Contains(string(f.Result), bobC) {
		t.Errorf("ws list: %s", f.Result)
	}
	if f := ws.do(ctx, `{"op":"send","conversation_id":"`+bobC+`","content":[{"type":"text","body":"x"}]}`, &evs); f.Error == nil || f.Error.Code != "not_found" {
		t.Errorf("ws send to bob's: %+v", f)
	}
	f = ws.do(ctx, `{"op":"search","q":"apples"}`, &evs)
	if !strings.Contains(string(f.Result), annC) || strings.Contains(string(f.Result), bobC) {
		t.Errorf("ws search: %s", f.Result)
	}
	for _, e := range evs {
		if e.conv() != annC {
			t.Errorf("ann's ws all stream carried an event of %s", e.conv())
		}
	}
	if len(evs) == 0 {
		t.Error("ann's ws all stream replayed nothing")
	}
}

// TestAllStreamResumesExactlyOnceWhileAnotherIsBusy: ann's all stream,
// cut and resumed from its last id while bob's long turn streams, gets
// each of her events exactly once and none of his, on SQLite and
// PostgreSQL (where the events reach the broker through LISTEN/NOTIFY).
func TestAllStreamResumesExactlyOnceWhileAnotherIsBusy(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "agentik.db")
			if backend == "postgres" {
				db = freshSchema(t)
			}
			allStreamResumesExactlyOnce(t, startTeam(t, db))
		})
	}
}

func allStreamResumesExactlyOnce(t *testing.T, tm *team) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	annC := tm.converse(t, tm.ann.key, "first")
	var bobC struct{ ID string }
	must(t, tm.bob.key, "POST", tm.p.url("/agentik/conversations"), `{}`, &bobC)

	// ann's stream, from the start, cut after her first turn's events.
	sctx, stop := context.WithCancel(ctx)
	first := sse(t, sctx, tm.ann.key, tm.p.url("/agentik/events/all?after=0"), "")
	var got []allEvent
	last := ""
	for ev := range first {
		e := decodeAll(t, ev.data)
		got, last = append(got, e), ev.id
		if e.Event.Type == "turn_ended" {
			break
		}
	}
	stop()

	// While ann is away, bob's long turn streams and ann's second runs.
	tm.fake.Enqueue(llmtest.Reply{Text: strings.Repeat("bob ", 300), Delay: 2 * time.Millisecond})
	bobDone := make(chan struct{})
	go func() {
		defer close(bobDone)
		call(t, tm.bob.key, "POST", tm.p.url("/agentik/conversations/"+bobC.ID+"/send"), `{"content":[{"type":"text","body":"talk"}]}`)
	}()
	tm.fake.Enqueue(llmtest.Reply{Text: "ann's second answer"})
	must(t, tm.ann.key, "POST", tm.p.url("/agentik/conversations/"+annC+"/send"), `{"content":[{"type":"text","body":"second"}]}`, nil)
	// ann comes back from her last id while bob is still busy.
	for ev := range sse(t, ctx, tm.ann.key, tm.p.url("/agentik/events/all"), last) {
		e := decodeAll(t, ev.data)
		got = append(got, e)
		if e.Event.Type == "turn_ended" {
			break
		}
	}
	<-bobDone

	// What the admin's log holds of ann's conversation, up to her last.
	var replay struct{ Events []allEvent }
	must(t, tm.admin, "GET", tm.p.url("/agentik/events/replay?limit=1000"), "", &replay)
	var want []int64
	for _, e := range replay.Events {
		if e.conv() == annC && e.Seq <= got[len(got)-1].Seq {
			want = append(want, e.Seq)
		}
	}
	var seqs []int64
	for _, e := range got {
		if e.conv() != annC {
			t.Errorf("ann's stream carried an event of %s", e.conv())
		}
		seqs = append(seqs, e.Seq)
	}
	if !slices.Equal(seqs, want) {
		t.Errorf("ann's seqs across the reconnect:\n%v\nwant (each of hers exactly once):\n%v", seqs, want)
	}
	bobSaw := false
	for _, e := range replay.Events {
		bobSaw = bobSaw || e.conv() == bobC.ID && e.Seq < got[len(got)-1].Seq
	}
	if !bobSaw {
		t.Error("bob's turn did not run while ann was away: the test proves nothing")
	}
}

// TestDisabledMemberIsCutOff: disabling a member closes their WebSocket
// with 1008 and ends their SSE stream within a second; their key then
// answers 401, and the other member goes on.
func TestDisabledMemberIsCutOff(t *testing.T) {
	// Not parallel: it bounds the cut-off at a second.
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws := dialWS(t, ctx, tm.p, tm.bob.key)
	if f := ws.do(ctx, `{"op":"subscribe","stream":"all"}`, nil); !f.OK {
		t.Fatalf("subscribe: %+v", f)
	}
	bobSSE := sse(t, ctx, tm.bob.key, tm.p.url("/agentik/events/all"), "")
	annSSE := sse(t, ctx, tm.ann.key, tm.p.url("/agentik/events/all"), "")

	disabled := time.Now()
	must(t, tm.admin, "PATCH", tm.p.url("/agentik/users/"+tm.bob.id), `{"disabled":true}`, nil)
	_, _, err := ws.c.Read(ctx)
	if st := websocket.CloseStatus(err); st != websocket.StatusPolicyViolation {
		t.Errorf("bob's socket ended with %v (%v), want 1008", st, err)
	}
	for range bobSSE {
	}
	if d := time.Since(disabled); d > time.Second {
		t.Errorf("bob was cut off after %v, want within a second", d)
	}
	if code, _ := call(t, tm.bob.key, "GET", tm.p.url("/agentik/conversations"), ""); code != 401 {
		t.Errorf("bob's key after he was disabled: %d, want 401", code)
	}
	annC := tm.converse(t, tm.ann.key, "still here")
	select {
	case ev, ok := <-annSSE:
		if !ok || decodeAll(t, ev.data).conv() != annC {
			t.Errorf("ann's stream after bob was disabled: %+v %v", ev, ok)
		}
	case <-ctx.Done():
		t.Fatal("ann's stream stopped")
	}

	// A revoked key stops at once, and so do the browser sessions signed
	// in with it (not those of her other key); deleting a user ends their
	// key too.
	var k struct{ ID, Key string }
	must(t, tm.ann.key, "POST", tm.p.url("/agentik/me/keys"), `{"name":"second"}`, &k)
	if code, _ := call(t, k.Key, "GET", tm.p.url("/agentik/me"), ""); code != 200 {
		t.Fatalf("ann's second key: %d", code)
	}
	session, other := keySession(t, tm.p, k.Key), keySession(t, tm.p, tm.ann.key)
	if code, b := cookieCall(t, session, tm.p.url("/agentik/me")); code != 200 || !strings.Contains(string(b), tm.ann.id) {
		t.Fatalf("ann's session of her second key: %d %s", code, b)
	}
	must(t, tm.ann.key, "DELETE", tm.p.url("/agentik/me/keys/"+k.ID), "", nil)
	if code, _ := call(t, k.Key, "GET", tm.p.url("/agentik/me"), ""); code != 401 {
		t.Errorf("ann's revoked key: %d, want 401", code)
	}
	if code, b := cookieCall(t, session, tm.p.url("/agentik/me")); code != 401 {
		t.Errorf("the session signed in with ann's revoked key: %d %s, want 401", code, b)
	}
	if code, b := cookieCall(t, other, tm.p.url("/agentik/me")); code != 200 {
		t.Errorf("the session of ann's other key: %d %s, want 200", code, b)
	}
	must(t, tm.admin, "DELETE", tm.p.url("/agentik/users/"+tm.ann.id), "", nil)
	if code, _ := call(t, tm.ann.key, "GET", tm.p.url("/agentik/me"), ""); code != 401 {
		t.Errorf("a deleted user's key: %d, want 401", code)
	}
	if code, b := call(t, tm.admin, "GET", tm.p.url("/agentik/conversations/"+annC), ""); code != 200 {
		t.Errorf("a deleted user's conversation, for the admin: %d %s", code, b)
	}
}

// keySession signs in at the sign-in form with key and returns the
// session cookie.
func keySession(t *testing.T, p *proc, key string) *http.Cookie {
	t.Helper()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(p.url("/login"), url.Values{"key": {key}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("sign in with a key: %d %v", resp.StatusCode, resp.Cookies())
	}
	return resp.Cookies()[0]
}

// cookieCall GETs u with the session cookie c.
func cookieCall(t *testing.T, c *http.Cookie, u string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.AddCookie(c)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestChangeBehindTheServerCutsOff: a change committed by someone else
// (another instance on a shared database; here written straight into the
// SQLite file) ends, within the server's recheck of running requests, the
// sockets it no longer lets in: a revoked key's, a disabled user's, a
// user's whose role changed. The others go on. The recheck reads every
// running request's user in one query (agent.UserStore.Standing).
func TestChangeBehindTheServerCutsOff(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "agentik.db")
	tm := startTeam(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var second struct{ ID, Key string }
	must(t, tm.ann.key, "POST", tm.p.url("/agentik/me/keys"), `{"name":"second"}`, &second)
	ann, ann2, bob := dialWS(t, ctx, tm.p, tm.ann.key), dialWS(t, ctx, tm.p, second.Key), dialWS(t, ctx, tm.p, tm.bob.key)
	for _, ws := range []*wsClient{ann, ann2, bob} {
		if f := ws.do(ctx, `{"op":"subscribe","stream":"all"}`, nil); !f.OK {
			t.Fatalf("subscribe: %+v", f)
		}
	}
	raw, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	behind := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	cutOff := func(ws *wsClient, who string) {
		t.Helper()
		for {
			_, _, err := ws.c.Read(ctx)
			if err == nil {
				continue // an event of the all stream
			}
			if st := websocket.CloseStatus(err); st != websocket.StatusPolicyViolation {
				t.Errorf("%s ended with %v (%v), want 1008", who, st, err)
			}
			return
		}
	}
	stillIn := func(ws *wsClient, who string) {
		t.Helper()
		if f := ws.do(ctx, `{"op":"list_conversations"}`, nil); !f.OK {
			t.Errorf("%s after the change: %+v", who, f)
		}
	}
	behind("DELETE FROM user_key WHERE id = ?", second.ID)
	cutOff(ann2, "the socket of ann's revoked key")
	stillIn(ann, "ann's first key's socket")
	stillIn(bob, "bob's socket")
	behind("UPDATE users SET disabled = true WHERE id = ?", tm.bob.id)
	cutOff(bob, "the socket of bob, disabled")
	stillIn(ann, "ann's socket")
	behind("UPDATE users SET role = ? WHERE id = ?", agent.RoleAdmin, tm.ann.id)
	cutOff(ann, "the socket of ann, made an admin")
}

// TestUserCLI: a team is set up with agentik user on a server that had no
// keys: the first key is an admin's (a member's first is refused: it would
// lock the admin out), then members are added and disabled.
func TestUserCLI(t *testing.T) {
	t.Parallel()
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"))
	cli := subcommand(t, p, "user")
	ann, err := cli("", "add", "ann", "--email", "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli("", "key", ann); err == nil || !strings.Contains(err.Error(), "admin's key first") {
		t.Fatalf("a member's key before any admin's: %v, want refused", err)
	}
	admin, err := cli("", "key", "local", "--name", "ops")
	if err != nil || !strings.HasPrefix(admin, "agk_") {
		t.Fatalf("admin key: %q %v", admin, err)
	}
	if code, _ := call(t, "", "GET", p.url("/agentik/conversations"), ""); code != 401 {
		t.Errorf("without a key once one exists: %d, want 401", code)
	}
	annKey, err := cli(admin, "key", ann)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := call(t, annKey, "GET", p.url("/agentik/conversations"), ""); code != 200 {
		t.Errorf("ann's key: %d", code)
	}
	list, err := cli(admin, "list")
	if err != nil || !strings.Contains(list, "ann@example.com") || !strings.Contains(list, "member") {
		t.Errorf("list: %q %v", list, err)
	}
	if _, err := cli(annKey, "list"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a member's list: %v, want 403", err)
	}
	if _, err := cli(admin, "disable", ann); err != nil {
		t.Fatal(err)
	}
	if code, _ := call(t, annKey, "GET", p.url("/agentik/conversations"), ""); code != 401 {
		t.Errorf("a disabled member's key: %d, want 401", code)
	}
	if _, err := cli(admin, "disable", "local"); err == nil {
		t.Error("disabling local was allowed")
	}
}

// subcommand runs `agentik NAME --server p ARGS` as key (AGENTIK_API_KEY)
// and returns its output, or an error with its stderr.
func subcommand(t *testing.T, p *proc, name string) func(key string, args ...string) (string, error) {
	return func(key string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(binary, append([]string{name, "--server", p.url("")}, args...)...)
		cmd.Env = []string{"AGENTIK_API_KEY=" + key}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, errb.String())
		}
		return strings.TrimSpace(out.String()), err
	}
}

// TestPeoplePage: each user sees their own usage on /people; an admin
// sees every user's.
func TestPeoplePage(t *testing.T) {
	t.Parallel()
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"), "AGENTIK_DEFAULT_BUDGET=1M/month")
	tm.fake.Enqueue(llmtest.Reply{Text: "hi", Usage: &agent.Usage{PromptTokens: 1200, CompletionTokens: 34, TotalTokens: 1234}})
	tm.converse(t, tm.ann.key, "hello")
	_, page := call(t, tm.ann.key, "GET", tm.p.url("/people"), "")
	if !strings.Contains(string(page), "1,234 tokens used of 1M/month") || strings.Contains(string(page), `data-testid="users"`) {
		t.Errorf("ann's page: %s", page)
	}
	_, page = call(t, tm.admin, "GET", tm.p.url("/people"), "")
	if !strings.Contains(string(page), `data-testid="users"`) || !strings.Contains(string(page), "bob@example.com") || !strings.Contains(string(page), "1,234") {
		t.Errorf("the admin's page: %s", page)
	}
}
